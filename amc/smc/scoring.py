"""Per-task scores, computed identically for every method from the same pool definition.

The *pool* of a task is every trajectory the method produced: all particles that finished
(archived when they finished, even if resampling later dropped them) plus the final
population. Every method -- ReAct, Best-of-N, SMC, AMC -- is scored over this same pool, so the
scores are comparable across methods.

- ``oracle_best``: max true total reward over the pool (the paper's metric; it uses the reward
  as an oracle to pick the answer). ``success``: whether it reaches the success threshold.
- ``deployable_reward``: reward of the pool trajectory that a *selection value* scores highest
  -- an answer a deployed agent could pick without the environment's reward (see
  :func:`selection_history` for exactly what the value sees). The same rule for every method.
  NaN when the run has no selection value (never silently the oracle). ``success_deployable``
  is its success flag (NaN likewise).
- ``max_weight_reward``: reward of the final-population trajectory with the largest final
  log-weight. That log-weight contains R / beta, so this selection *uses the reward*: for
  ReAct and Best-of-N it equals the oracle. ``success_max_weight`` is its success flag.
- ``weighted_mean_reward``: sum_i W_i R_i over the final population (the posterior-mean
  reward estimate; W the normalised final weights).

Trajectories whose prior failed are not part of the pool nor of the population scored here
(the driver leaves them out). If nothing is left -- every particle failed -- the scores are
undefined: NaN, and ``success`` 0.

Pure functions over arrays and histories; no I/O (the driver calls the selection value).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from amc.smc.weights import LogWeights
from amc.types import History

LEGACY_KEYS = {"selected_reward": "max_weight_reward", "success_selected": "success_max_weight"}
"""Metric names written before the max-weight selection was named for what it reads."""


def select_max_weight(log_w: Sequence[float]) -> int:
    """Index of the largest log-weight (the first one on ties)."""
    if len(log_w) == 0:
        raise ValueError("no particles to select from")
    return int(np.argmax(np.asarray(log_w, dtype=np.float64)))


def weighted_mean(log_w: Sequence[float], values: Sequence[float]) -> float:
    """sum_i W_i x_i with W the normalised weights (uniform if all weights are zero)."""
    W = LogWeights(np.asarray(log_w, dtype=np.float64)).normalised()
    return float(np.dot(W, np.asarray(values, dtype=np.float64)))


def selection_history(h: History) -> History:
    """What the selection value sees of a trajectory: its last pre-terminal state, reward-free.

    V predicts the return-to-go f(s), and a terminal state is trained to 0
    (:mod:`amc.value.data`), so a finished trajectory is judged at the state *before* its last
    (terminal) step: how much reward the agent expected from there. An unfinished trajectory
    (out of steps) is judged at its last state. Every step's reward is set to 0 and the
    ``info`` entries that carry it (names containing reward, score, won or success: SciWorld's
    ``score``, WebShop's ``reward_info``) are dropped, so no value -- however it is written --
    can read the environment's reward; the rest of ``info`` (e.g. the synthetic tree's node)
    stays, as an agent sees its state.
    """
    steps = h.steps[:-1] if h.done else h.steps
    return replace(h, steps=tuple(replace(s, reward=0.0, info=_reward_free(s.info))
                                  for s in steps), valid_actions=None)


def _reward_free(info: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in info.items()
            if not any(w in k.lower() for w in ("reward", "score", "won", "success"))}


def select_by_value(values: Sequence[float]) -> int:
    """Index of the largest selection value (the first one, in pool order, on ties)."""
    if len(values) == 0:
        raise ValueError("no trajectories to select from")
    return int(np.argmax(np.asarray(values, dtype=np.float64)))


def task_metrics(
    pool_rewards: Sequence[float],
    population_log_w: Sequence[float],
    population_rewards: Sequence[float],
    success_threshold: float,
    pool_values: Sequence[float] | None = None,
) -> dict[str, float]:
    """The scores of one task (see the module docstring).

    ``pool_values``: the selection value of each pool trajectory, in the order of
    ``pool_rewards``; None when the run has no selection value (deployable scores are NaN).
    """
    if len(population_log_w) != len(population_rewards):
        raise ValueError("population weights and rewards differ in length")
    if pool_values is not None and len(pool_values) != len(pool_rewards):
        raise ValueError("pool selection values and rewards differ in length")
    oracle = float(max(pool_rewards)) if len(pool_rewards) else math.nan
    if len(population_rewards):
        sel = float(population_rewards[select_max_weight(population_log_w)])
        mean = weighted_mean(population_log_w, population_rewards)
    else:
        sel = mean = math.nan
    dep = (float(pool_rewards[select_by_value(pool_values)])
           if pool_values is not None and len(pool_rewards) else math.nan)
    return {
        "oracle_best": oracle,
        "deployable_reward": dep,
        "max_weight_reward": sel,
        "weighted_mean_reward": mean,
        "success": float(oracle >= success_threshold),
        "success_deployable": math.nan if math.isnan(dep) else float(dep >= success_threshold),
        "success_max_weight": float(sel >= success_threshold),
    }


NUMBERS = tuple(f"{m}{s}" for m in ("oracle_best", "deployable_reward", "max_weight_reward",
                                     "weighted_mean_reward", "success", "success_deployable",
                                     "success_max_weight", "log_z")
                for s in ("", "_se", "_lo", "_hi", "_p"))
"""Summary numbers that are NaN when not measured: strict JSON writes them null."""


def upgrade_metric_keys(d: dict[str, object]) -> dict[str, object]:
    """``d`` with metric names of older records renamed (``selected_reward`` and its ``_se``...)
    and a summary number written as null (strict JSON has no NaN) read back as NaN.

    The one place old result records and summaries are read as new ones; a new key already
    present wins.
    """
    out = dict(d)
    for old, new in LEGACY_KEYS.items():
        for suffix in ("", "_se"):
            if old + suffix in out:
                value = out.pop(old + suffix)
                out.setdefault(new + suffix, value)
    for k in NUMBERS:
        if k in out and out[k] is None:
            out[k] = math.nan
    return out
