"""What a value must get right for resampling, measured: rank siblings, tilt their weights.

Beside the pooled regression/AUC metrics of :mod:`amc.value.metrics` (which reward ranking easy
tasks above hard ones), per (task, step) group of states:

- ``auc_within`` and ``auc_within_step<t>`` at each resampling step t
  (:func:`amc.value.metrics.within_group_auc` of ``clip(r + f)``): does the value rank the
  siblings that succeed above those that fail;
- ``spread``: the mean within-group standard deviation of ``V = f + r``, the differences the
  weights ``exp(V / beta)`` see; ``spread_over_beta`` and ``weight_ratio = exp(spread / beta)``
  (a spread of 0.01 at beta = 0.1 is a ratio of 1.1: resampling is nearly uniform);
- ``log_loss_beta``: the within-group softmax cross-entropy of "which sibling succeeds" at
  the resampling beta (:class:`amc.value.temperature.Groups`), beside ``log_loss_uniform``
  (a constant value) and, given a fitted temperature, ``log_loss_fitted``.

Each is also given at every resampling step (suffix ``_step<t>``), where the value steers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from amc.value.metrics import within_group_auc
from amc.value.temperature import Groups, weight_ratio


def within_spread(values: np.ndarray, groups: Sequence[Any]) -> float:
    """Mean over groups of two or more states of the (population) standard deviation of
    ``values`` within the group (NaN when there is no such group)."""
    v = np.asarray(values, float)
    idx: dict[Any, list[int]] = {}
    for i, g in enumerate(groups):
        idx.setdefault(g, []).append(i)
    sds = [float(v[m].std()) for m in idx.values() if len(m) >= 2]
    return float(np.mean(sds)) if sds else float("nan")


def _block(v: np.ndarray, p: np.ndarray, y: np.ndarray, groups: list[Any], beta: float,
           temperature: float | None) -> dict[str, float]:
    g = Groups.of(v, y, groups)
    spread = within_spread(v, groups)
    out = {"auc_within": within_group_auc(p, y, groups), "spread": spread,
           "spread_over_beta": spread / beta,
           "weight_ratio": weight_ratio(spread, beta) if math.isfinite(spread) else math.nan,
           "log_loss_beta": g.log_loss(beta), "log_loss_uniform": g.log_loss(math.inf),
           "mixed_groups": float(len(g))}
    if temperature is not None:
        out["log_loss_fitted"] = g.log_loss(temperature)
    return out


def sibling_metrics(pred: Sequence[float] | np.ndarray, reward_so_far: Sequence[float] | np.ndarray,
                    success: Sequence[bool] | np.ndarray, groups: Sequence[tuple[Any, int]],
                    steps: Sequence[int], beta: float, temperature: float | None = None
                    ) -> dict[str, float]:
    """The module's measures over all (task, step) ``groups`` and at each step in ``steps``
    (keys suffixed ``_step<t>``); NaN where undefined (no mixed group at a step)."""
    f, r = np.asarray(pred, float), np.asarray(reward_so_far, float)
    y = np.asarray(success, bool)
    if not (len(f) == len(r) == len(y) == len(groups)):
        raise ValueError("sibling_metrics needs pred, reward_so_far, success and groups of "
                         "equal length")
    if beta <= 0:
        raise ValueError(f"beta must be > 0, got {beta}")
    v = f + r
    p = np.clip(v, 0.0, 1.0)
    gl = list(groups)
    out = _block(v, p, y, gl, beta, temperature)
    step_of = np.array([g[1] for g in gl])
    for t in steps:
        sel = np.flatnonzero(step_of == t)
        block = _block(v[sel], p[sel], y[sel], [gl[i] for i in sel], beta, temperature)
        out.update({f"{k}_step{t}": x for k, x in block.items()})
    return out
