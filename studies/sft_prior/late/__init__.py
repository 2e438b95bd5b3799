"""Resampling only once the value can rank (issue 61): the round-3 prior on the plan-band tasks,
SMC with the progress value resampling after steps 4-11, against the round-3 cell's Best-of-4
(``protocol.json``)."""
