"""The fine-tuned embedded prior (issue 61): held-out tasks, SFT run, skill by checkpoint, regime.

``declare_heldout`` writes ``heldout.json`` (the validation and test-reserve tasks no
demonstration may use) before any SFT run; the SFT stage reads it in
``sft.demos.exclude_tasks_files``.
"""
