"""Sweeps: where does AMC beat Best-of-N? One DVC experiment per configuration ("cell").

A cell fixes everything that decides the comparison -- the skill q of the ``planner-mix``
prior on TextCraft, the KL coefficient beta, the resampling schedule, the number of particles
N, the value (learned V_theta, the Monte-Carlo ``rollout`` upper bound, or none) and the step
budget relative to the optimal plan -- and runs Best-of-N and AMC (SMC with that value) at
equal N on the same (task, seed) pairs, so every comparison is paired.

Modules: :mod:`~studies.sweeps.config` (the typed ``sweeps/params.yaml``),
:mod:`~studies.sweeps.cell`
(the DVC stage: one cell, per-run rows + metrics + an MLflow run), :mod:`~studies.sweeps.value`
(the learned V_theta the cells use, and its quality vs dataset size), :mod:`~studies.sweeps.stats`
(paired differences and intervals), :mod:`~studies.sweeps.harvest` (experiment results ->
committed ``evidence/runs/``) and :mod:`~studies.sweeps.evidence` (``docs/evidence.md``).

The prior is a simulation instrument (a planner mixed with random actions): these numbers say
how the *method* behaves for a prior of a given skill, never how an LLM agent does.
"""
