"""The regime search on the fine-tuned prior (issue 61, item 3): where could a value matter?

``protocol.json`` (committed before any of its runs) declares the SFT checkpoints, depths,
horizons, N, resampling steps and betas, the validation tasks (``../heldout.json``) and the
choice rule. ``python -m studies.sft_prior.regime_search.run --step S --depth D`` collects one
(checkpoint, depth) cell, resumable, and keeps its results gzipped under
``evidence/sft-prior/regime-search/``; ``...analyse`` computes every regime's room with the
earlier search's estimator (:mod:`studies.llm_regime.regime_search.analyse`).
"""
