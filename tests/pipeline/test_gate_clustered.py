"""The gate's test over tasks holds its level on a clustered null and has its recorded power.

Simulated gates: per-(task, seed) differences d = mu + u_task + e, with per-task effects
u ~ N(0, 0.3) (the challenger is better on some tasks, worse on others) and seed noise
e ~ N(0, 0.3). Thousands of gates run through the gate's own decision (vectorised), in seconds.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from amc.pipeline.gate_stats import (
    gate_passes_many,
    gate_test,
    paired_test,
    reuse_level,
    task_differences,
)
from amc.stats import mde, sign_flip_p

GATES, LEVEL, SD_TASK, SD_SEED = 2000, 0.05, 0.3, 0.3
SE_RATE = math.sqrt(LEVEL * (1 - LEVEL) / GATES)


def clustered(mu: float, tasks: int, seeds: int, seed: int) -> np.ndarray:
    """(gates, tasks, seeds) differences of the clustered model."""
    rng = np.random.default_rng(seed)
    u = rng.normal(0.0, SD_TASK, size=(GATES, tasks, 1))
    return mu + u + rng.normal(0.0, SD_SEED, size=(GATES, tasks, seeds))


@pytest.mark.parametrize(("tasks", "seeds"), [(12, 6), (30, 2), (30, 6)])
def test_a_not_better_challenger_is_promoted_at_most_level_of_the_time(tasks: int, seeds: int
                                                                       ) -> None:
    d = clustered(0.0, tasks, seeds, seed=tasks * 10 + seeds)
    rate = gate_passes_many(d.mean(axis=2), min_effect=0.0, level=LEVEL).mean()
    assert rate <= LEVEL + 2 * SE_RATE


def test_counting_pairs_as_independent_does_not_hold_the_level() -> None:
    # the old gate (a t test over every (task, seed) pair) on the same null: about twice the
    # level with 6 seeds a task (the measured 10.5% of issue 31)
    d = clustered(0.0, 12, 6, seed=7)[:600]
    rate = np.mean([paired_test(g.ravel(), min_effect=0.0, level=LEVEL).passes for g in d])
    assert rate > LEVEL + 3 * math.sqrt(LEVEL * (1 - LEVEL) / 600)


@pytest.mark.parametrize(("tasks", "seeds"), [(12, 3), (30, 3)])
def test_a_challenger_better_by_the_mde_is_promoted_80_percent_of_the_time(tasks: int,
                                                                           seeds: int) -> None:
    sd = math.sqrt(SD_TASK ** 2 + SD_SEED ** 2 / seeds)  # sd of a task's seed mean
    effect = mde(sd, tasks, level=LEVEL, power=0.8)
    d = clustered(effect, tasks, seeds, seed=tasks + seeds).mean(axis=2)
    rate = gate_passes_many(d, min_effect=0.0, level=LEVEL).mean()
    se = math.sqrt(0.8 * 0.2 / GATES)
    # 80% within Monte-Carlo error, and not far above it (the mde is not loose) ...
    assert 0.8 - 2 * se <= rate <= 0.85
    # ... while two thirds of it is found far less often
    less = gate_passes_many(clustered(effect * 2 / 3, tasks, seeds, seed=1).mean(axis=2),
                            min_effect=0.0, level=LEVEL).mean()
    assert less < 0.6


def test_the_vectorised_decision_is_the_gates_decision() -> None:
    d = clustered(0.1, 10, 3, seed=3).mean(axis=2)[:200]
    many = gate_passes_many(d, min_effect=0.02, level=LEVEL)
    one = [gate_test(row, min_effect=0.02, level=LEVEL).passes for row in d]
    assert list(many) == one  # 10 tasks: exact enumeration in both


def test_gate_test_reports_exact_p_and_mde() -> None:
    # three tasks all better: the exact one-sided p is 1/8, never below it whatever the t says
    t = gate_test([0.2, 0.21, 0.19], min_effect=0.0, level=LEVEL)
    assert t.p_value == pytest.approx(1 / 8) and t.exact and not t.passes
    assert t.t_p_value < LEVEL  # the t test would have promoted
    assert t.mde == pytest.approx(mde(float(np.std([0.2, 0.21, 0.19], ddof=1)), 3,
                                      level=LEVEL, power=0.8))
    assert not gate_test([0.5], min_effect=0.0, level=LEVEL).passes
    with pytest.raises(ValueError):
        gate_test([0.1, math.nan], min_effect=0.0, level=LEVEL)


def test_seeds_are_averaged_within_a_task() -> None:
    rows = [("a", 1.0), ("a", 0.0), ("b", 0.5)]
    assert task_differences(rows) == {"a": 0.5, "b": 0.5}


def test_reuse_spends_the_level_over_a_frozen_sets_decisions() -> None:
    levels = [reuse_level(LEVEL, k) for k in range(1, 10_001)]
    assert levels[:3] == pytest.approx([LEVEL / 2, LEVEL / 6, LEVEL / 12])
    assert sum(levels) < LEVEL
    # R not-better challengers in a row, each on the same frozen set: the chance that any is
    # promoted stays below the level (independent per-round effects and noise)
    rng = np.random.default_rng(11)
    tasks, rounds = 20, 5
    u = rng.normal(0.0, SD_TASK, size=(GATES, rounds, tasks))
    any_promoted = np.zeros(GATES, dtype=bool)
    for r in range(rounds):
        any_promoted |= gate_passes_many(u[:, r], min_effect=0.0,
                                         level=reuse_level(LEVEL, r + 1))
    assert any_promoted.mean() <= LEVEL + 2 * SE_RATE
    fixed = np.zeros(GATES, dtype=bool)
    for r in range(rounds):
        fixed |= gate_passes_many(u[:, r], min_effect=0.0, level=LEVEL)
    assert fixed.mean() > 3 * LEVEL  # the fixed level: about 1 - 0.95^5 = 23%


def test_sign_flip_p_by_hand() -> None:
    assert sign_flip_p([1 / 3] * 3 + [0.0] * 9) == pytest.approx(0.25)  # 2 of 8, two-sided
    assert sign_flip_p([0.1, 0.2, -0.05], alternative="greater") == pytest.approx(2 / 8)
    assert sign_flip_p([0.0, 0.0]) == 1.0
