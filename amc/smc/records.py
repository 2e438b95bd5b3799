"""What one task's run produces: per-step diagnostics, trajectories, scores and usage.

A :class:`TaskResult` is written as one JSON line as soon as its task finishes::

    {task_id, env, method, seed, n_particles, config_hash,
     steps: [{t, ess, resampled, ancestors, log_weights, values, log_z_increment, ...}],
     trajectories: [{pid, slot, lineage, steps: [...], total_reward, done,
                     final_log_weight, failure, selection_value}],
     metrics: {oracle_best, deployable_reward, max_weight_reward, weighted_mean_reward,
               success, ...},
     usage: {prompt_tokens, completion_tokens, cached_tokens, calls, retries, cost_usd},
     wall_s, failures: [...]}

The runner's results lines leave ``wall_s`` out (it goes to a timing file beside them), so a
rerun with the same seeds writes the same bytes; records that carry it still load.

``trajectories`` holds the final population (``slot`` = its index) plus every finished
trajectory that resampling later dropped (``slot`` = null): together, the pool every method is
scored over. ``selection_value`` is what the run's selection value predicted for a
trajectory (:func:`amc.smc.scoring.selection_history`; null without one). Records written
before the metrics were renamed load with the new names
(:func:`amc.smc.scoring.upgrade_metric_keys`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from amc.smc.scoring import upgrade_metric_keys
from amc.types import History, Step, Usage


def _finite(x: float) -> float | str:
    """JSON has no inf/nan: store them as strings."""
    return x if math.isfinite(x) else str(x)


def _num(x: Any) -> float:
    return float(x)


@dataclass(frozen=True)
class StepInfo:
    """Diagnostics of one SMC step.

    ``ess`` and ``log_weights`` are the whole population's after weighting, before any
    resampling; ``log_z_increment`` and ``n_live`` are after resampling.
    """

    t: int
    ess: float
    resampled: bool
    ancestors: list[int] | None
    log_weights: list[float]
    values: list[float | None]
    log_z_increment: float
    n_live: int
    degenerate: bool = False  # every eligible weight was zero when resampling
    resample_ess: float | None = None  # the ESS the schedule compared with rho * N: of the
    # particles eligible for resampling, scaled to N (None when the value was not evaluated)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["log_weights"] = [_finite(x) for x in self.log_weights]
        d["log_z_increment"] = _finite(self.log_z_increment)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> StepInfo:
        return cls(
            t=int(d["t"]), ess=float(d["ess"]), resampled=bool(d["resampled"]),
            ancestors=d.get("ancestors"), log_weights=[_num(x) for x in d["log_weights"]],
            values=list(d["values"]), log_z_increment=_num(d["log_z_increment"]),
            n_live=int(d["n_live"]), degenerate=bool(d.get("degenerate", False)),
            resample_ess=d.get("resample_ess"),
        )


@dataclass(frozen=True)
class TrajectoryRecord:
    """One trajectory of the pool, with its final log-weight."""

    pid: int
    slot: int | None
    lineage: tuple[int, ...]
    steps: tuple[Step, ...]
    total_reward: float
    done: bool
    final_log_weight: float
    failure: str | None = None
    selection_value: float | None = None  # the selection value's f at selection_history

    def history(self, task_id: str, observation0: str, budget: int | None = None) -> History:
        """The trajectory as a :class:`History` (for value-model datasets)."""
        return History(task_id, observation0, self.steps, budget=budget)

    def to_dict(self) -> dict[str, Any]:
        return {
            "pid": self.pid, "slot": self.slot, "lineage": list(self.lineage),
            "steps": [s.to_dict() for s in self.steps], "total_reward": self.total_reward,
            "done": self.done, "final_log_weight": _finite(self.final_log_weight),
            "failure": self.failure, "selection_value": self.selection_value,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TrajectoryRecord:
        return cls(
            pid=int(d["pid"]), slot=d.get("slot"), lineage=tuple(d.get("lineage", ())),
            steps=tuple(Step.from_dict(s) for s in d["steps"]),
            total_reward=float(d["total_reward"]), done=bool(d["done"]),
            final_log_weight=_num(d["final_log_weight"]), failure=d.get("failure"),
            selection_value=d.get("selection_value"),
        )


@dataclass(frozen=True)
class TaskResult:
    """Everything one (task, method, seed) run produced."""

    task_id: str
    env: str
    method: str
    seed: int
    n_particles: int
    config_hash: str
    steps: tuple[StepInfo, ...]
    trajectories: tuple[TrajectoryRecord, ...]
    metrics: Mapping[str, float]
    usage: Usage
    wall_s: float | None  # seconds the task took; None when read from a results line, which
    # leaves the wall time out (the runner keeps it beside the results: amc.results.timing_path)
    failures: tuple[Mapping[str, Any], ...] = ()
    observation0: str = ""
    budget: int | None = None  # the step budget (max_steps) the trajectories ran under

    @property
    def population(self) -> list[TrajectoryRecord]:
        """The final population, in slot order."""
        slotted = [(r.slot, r) for r in self.trajectories if r.slot is not None]
        return [r for _, r in sorted(slotted, key=lambda sr: sr[0])]

    def to_dict(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id, "env": self.env, "method": self.method, "seed": self.seed,
            "n_particles": self.n_particles, "config_hash": self.config_hash,
            "observation0": self.observation0, "budget": self.budget,
            "steps": [s.to_dict() for s in self.steps],
            "trajectories": [r.to_dict() for r in self.trajectories],
            "metrics": {k: _finite(float(v)) for k, v in self.metrics.items()},
            "usage": self.usage.to_dict(), "cost_usd": self.usage.cost_usd,
            "wall_s": self.wall_s, "failures": [dict(f) for f in self.failures],
        }

    def line(self, sample: str | None = None) -> dict[str, Any]:
        """The runner's results line: :meth:`to_dict` without the wall time (a measurement of
        the run, kept beside: :func:`amc.results.timing_path`), so that a rerun with the same
        seeds writes the same bytes; with the sampling hash when known."""
        rec = {k: v for k, v in self.to_dict().items() if k != "wall_s"}
        return rec if sample is None else {**rec, "sample_hash": sample}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TaskResult:
        return cls(
            task_id=str(d["task_id"]), env=d["env"], method=d["method"], seed=int(d["seed"]),
            n_particles=int(d["n_particles"]), config_hash=d.get("config_hash", ""),
            steps=tuple(StepInfo.from_dict(s) for s in d["steps"]),
            trajectories=tuple(TrajectoryRecord.from_dict(r) for r in d["trajectories"]),
            metrics={k: _num(v) for k, v in upgrade_metric_keys(d["metrics"]).items()},
            usage=Usage.from_dict(d["usage"]),
            wall_s=None if d.get("wall_s") is None else float(d["wall_s"]),
            failures=tuple(d.get("failures", ())), observation0=d.get("observation0", ""),
            budget=None if d.get("budget") is None else int(d["budget"]),
        )
