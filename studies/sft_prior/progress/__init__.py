"""The progress-value cell (issue 61): SMC resampling after every step with the hand-made
``textcraft-progress`` value against Best-of-4, on the DAgger prior, as the regime's room."""
