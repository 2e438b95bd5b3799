"""Re-selection: a finished task's deployable answer under another selection value, no resampling.

The selection value scores a task's pool only after the run (:mod:`amc.smc.scoring`): which
trajectories a method sampled does not depend on it. So when only the selection value changed
(a retrained challenger, say), a stored :class:`~amc.smc.records.TaskResult` is brought up to
date by scoring its stored pool with the new value and recomputing the selection-dependent
metrics; the sampled trajectories, usage, steps and wall time are kept as they were. This is
what lets ``dvc exp run -S train.lr=...`` reuse ReAct's and Best-of-N's rollouts.

The pool and population are rebuilt exactly as the sampler built them (``trajectories`` holds
the final population, then the finished trajectories resampling dropped; failures are never
scored), so a re-selected result equals the one a fresh run with the new value would have
written, up to the value's own determinism.
"""

from __future__ import annotations

from dataclasses import replace

from amc.protocols import ValueFunction
from amc.smc.kernel import score_states
from amc.smc.records import TaskResult
from amc.smc.scoring import selection_history, task_metrics

__all__ = ["reselect"]


async def reselect(res: TaskResult, selection: ValueFunction | None, *, config_hash: str,
                   success_threshold: float) -> TaskResult:
    """``res`` as if run with ``selection`` (None: no deployable selection, NaN scores)."""
    scored = [r for r in res.trajectories if r.failure is None]  # pool order, as sampled
    values: list[float] | None = None
    if selection is not None and scored:
        states = [selection_history(r.history(res.task_id, res.observation0, res.budget))
                  for r in scored]
        values, _ = await score_states(selection, states, list(range(len(states))))
    it = iter(values or [])
    trajectories = tuple(
        r if r.failure else replace(r, selection_value=next(it) if values is not None else None)
        for r in res.trajectories)
    pop = [r for r in res.population if r.failure is None]
    metrics = task_metrics([r.total_reward for r in scored], [r.final_log_weight for r in pop],
                           [r.total_reward for r in pop], success_threshold, values)
    kept = {k: v for k, v in res.metrics.items() if k not in metrics}  # log_z and the like
    return replace(res, trajectories=trajectories, metrics={**metrics, **kept},
                   config_hash=config_hash)
