"""Report rendering: documents generated from the pipeline's and ``amc run``'s outputs.

- :mod:`.results_doc` -- ``docs/results.md`` (``amc results-doc``), from run summaries.
- :mod:`.run_summary` -- reading an ``amc run`` summary (roles, N, paired differences).
- :mod:`.grpo_table` -- the GRPO-vs-frozen-prior section.
- :mod:`.paired` -- paired differences to Best-of-N (shared with the evaluate/report stages).

Below the pipeline: the stages import these, never the other way round.
"""
