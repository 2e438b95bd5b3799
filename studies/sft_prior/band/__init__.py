"""The plan-band cell (issue 61): the progress-value regime on tasks whose plans take 6 to 10
menu steps, with a horizon that leaves room to repair mistakes (H 12)."""
