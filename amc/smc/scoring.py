"""Per-task scores, computed identically for every method from the same pool definition.

The *pool* of a task is every trajectory the method produced: all particles that finished
(archived when they finished, even if resampling later dropped them) plus the final
population. Every method -- ReAct, Best-of-N, SMC -- is scored over this same pool, so the
paper's oracle metric is comparable across methods.

- ``oracle_best``: max true total reward over the pool (the paper's metric; uses the reward
  as an oracle to pick the answer).
- ``selected_reward``: reward of the final-population trajectory with the largest final
  log-weight (reward-free selection: what a user without an oracle would submit).
- ``weighted_mean_reward``: sum_i W_i R_i over the final population (the posterior-mean
  reward estimate).
- ``success`` / ``success_selected``: whether those reach the success threshold.

Trajectories whose prior failed are not part of the pool nor of the population scored here
(the driver leaves them out). If nothing is left -- every particle failed -- the scores are
undefined: NaN, and ``success`` 0.

Pure functions over arrays; no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from amc.smc.weights import LogWeights


def select_max_weight(log_w: Sequence[float]) -> int:
    """Index of the largest log-weight (the first one on ties)."""
    if len(log_w) == 0:
        raise ValueError("no particles to select from")
    return int(np.argmax(np.asarray(log_w, dtype=np.float64)))


def weighted_mean(log_w: Sequence[float], values: Sequence[float]) -> float:
    """sum_i W_i x_i with W the normalised weights (uniform if all weights are zero)."""
    W = LogWeights(np.asarray(log_w, dtype=np.float64)).normalised()
    return float(np.dot(W, np.asarray(values, dtype=np.float64)))


def task_metrics(
    pool_rewards: Sequence[float],
    population_log_w: Sequence[float],
    population_rewards: Sequence[float],
    success_threshold: float,
) -> dict[str, float]:
    """The scores of one task (see the module docstring)."""
    if len(population_log_w) != len(population_rewards):
        raise ValueError("population weights and rewards differ in length")
    oracle = float(max(pool_rewards)) if len(pool_rewards) else math.nan
    if len(population_rewards):
        sel = float(population_rewards[select_max_weight(population_log_w)])
        mean = weighted_mean(population_log_w, population_rewards)
    else:
        sel = mean = math.nan
    return {
        "oracle_best": oracle,
        "selected_reward": sel,
        "weighted_mean_reward": mean,
        "success": float(oracle >= success_threshold),
        "success_selected": float(sel >= success_threshold),
    }


def mean_and_se(xs: Sequence[float]) -> tuple[float, float]:
    """Mean and standard error of the mean (s.e. 0 for fewer than two values)."""
    a = np.asarray(xs, dtype=np.float64)
    if a.size == 0:
        return math.nan, math.nan
    if a.size == 1:
        return float(a[0]), 0.0
    return float(a.mean()), float(a.std(ddof=1) / math.sqrt(a.size))
