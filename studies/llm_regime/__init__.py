"""The embedded-LLM study: AMC with the embedded Gemma-3-270M prior on TextCraft.

Its declared test set (``declared/``, :mod:`studies.llm_regime.testset`), the retraining rounds
measured on that set (:mod:`studies.llm_regime.round_eval`, :mod:`studies.llm_regime.round_values`,
:mod:`studies.llm_regime.round_restore`), the kept results' paired differences
(:mod:`studies.llm_regime.kept_pairs`) and the regime search (``regime_search/``). It imports
``amc``; nothing in ``amc`` imports it. ``studies/llm_regime/run.sh`` runs every step (README.md).
"""
