"""The horizon-16 cell: the round-3 prior's plan-band cell with horizon 16 (issue 61)."""
