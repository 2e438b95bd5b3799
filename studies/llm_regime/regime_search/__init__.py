"""The embedded-LLM regime search (issue 49, item 5): where could a value matter at all?

Before a value is tuned, the *room* of each candidate regime (TextCraft depth, horizon, N,
resampling step, beta) is measured from the prior's own rollouts: Best-of-N against a perfect
resampler that knows each state's chance of success (:mod:`amc.value.room`). The candidates, the
validation tasks and the choice rule are declared in ``protocol.json``, committed before any
of its runs; ``python -m studies.llm_regime.regime_search.run`` collects (resumable) and
``python -m studies.llm_regime.regime_search.analyse`` writes ``evidence/llm-regime/regime-search/
room.json`` and the results section.
"""
