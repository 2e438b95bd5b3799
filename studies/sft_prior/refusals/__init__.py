"""The refusal-penalty cell: the round-3 plan-band cell with refused actions charged (issue 61)."""
