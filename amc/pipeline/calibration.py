"""A value model's calibration on the prior's own states, shared by the promote stage's guard
and the drift monitor: the states are (prefix, realised future reward) pairs of evaluated
trajectories, the error is in reward units (:mod:`amc.pipeline.gate_stats`)."""

from __future__ import annotations

import asyncio
import math

from amc.pipeline.gate_stats import calibration_bias, calibration_mae, cluster_se
from amc.pipeline.params import PipelineParams
from amc.smc.records import TaskResult
from amc.types import History


def prior_states(results: dict[str, list[TaskResult]], specs: list[str], limit: int, seed: int
                 ) -> list[tuple[History, float]]:
    """(prefix history, realised future reward) of the trajectories of ``specs``, at most
    ``limit`` (a seeded subsample, so both models are scored on the same states)."""
    import numpy as np

    pairs = []
    for key in sorted(results):
        if key.split("#")[0] not in specs:
            continue
        for r in results[key]:
            for tr in r.trajectories:
                rewards = [s.reward for s in tr.steps]
                for k in range(len(tr.steps)):
                    pairs.append((History(r.task_id, r.observation0, tr.steps[:k], budget=r.budget),
                                  float(sum(rewards[k:]))))
    if len(pairs) > limit:
        idx = np.random.default_rng(seed).choice(len(pairs), size=limit, replace=False)
        pairs = [pairs[i] for i in sorted(idx)]
    return pairs


def model_scores(p: PipelineParams, uri: str, histories: list[History]) -> list[float]:
    """The value model ``uri``'s scores of ``histories`` (reward units)."""
    if not histories:
        return []
    from amc.registry import ENVIRONMENTS, VALUES

    async def score() -> list[float]:
        env_opts = ENVIRONMENTS.validate(p.env.name, p.env.options)
        cfg = p.model_value(uri)
        v = VALUES.build(cfg.name, cfg.options, beta=p.smc.beta,
                         prior=None, env_name=p.env.name, env_options=env_opts)
        try:
            return [float(x) for x in await v.score(histories)]
        finally:
            await v.aclose()

    return asyncio.run(score())


def model_calibration(p: PipelineParams, uri: str, pairs: list[tuple[History, float]]
                      ) -> dict[str, float | None]:
    """Calibration error (MAE) and bias (mean predicted - realised), reward units, of the
    value model ``uri`` on ``pairs``, each with its standard error (``_se``: clustered by task,
    since one task's states share its trajectories)."""
    if not pairs:
        return {"calibration_mae": None, "calibration_bias": None,
                "calibration_mae_se": None, "calibration_bias_se": None}
    pred, real = model_scores(p, uri, [h for h, _ in pairs]), [y for _, y in pairs]
    err = [a - b for a, b in zip(pred, real, strict=True)]  # (states,)
    tasks = [h.task_id for h, _ in pairs]
    return {"calibration_mae": calibration_mae(pred, real),
            "calibration_bias": calibration_bias(pred, real),
            "calibration_mae_se": _finite(cluster_se([abs(e) for e in err], tasks)),
            "calibration_bias_se": _finite(cluster_se(err, tasks))}


def _finite(x: float) -> float | None:
    """None for NaN (fewer than two tasks: no standard error)."""
    return None if math.isnan(x) else x
