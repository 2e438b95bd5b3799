"""Reward-free selections on hand-built pools: masked max-weight, the mode, selection loss."""

from __future__ import annotations

import math

import numpy as np
import pytest

from amc.smc.records import StepInfo, TaskResult, TrajectoryRecord
from amc.types import Step, Usage
from studies.sweeps.hidden import (
    anchor,
    hidden_metrics,
    masked_log_weights,
    mode_index,
    selection_summary,
)

BETA = 0.5


def traj(slot: int, actions: list[str], rewards: list[float], log_w: float,
         failure: str | None = None) -> TrajectoryRecord:
    steps = tuple(Step(a, a, "obs", r, i == len(actions) - 1) for i, (a, r)
                  in enumerate(zip(actions, rewards, strict=True)))
    return TrajectoryRecord(pid=slot, slot=slot, lineage=(), steps=steps,
                            total_reward=sum(rewards), done=True, final_log_weight=log_w,
                            failure=failure)


def result(trajs: list[TrajectoryRecord], resampled_at: tuple[int, ...] = ()) -> TaskResult:
    infos = tuple(StepInfo(t=t, ess=1.0, resampled=t in resampled_at, ancestors=None,
                           log_weights=[], values=[], log_z_increment=0.0, n_live=len(trajs))
                  for t in range(1, 6))
    return TaskResult(task_id="0", env="webshop", method="amc", seed=0,
                      n_particles=len(trajs), config_hash="h", steps=infos,
                      trajectories=tuple(trajs), metrics={}, usage=Usage(), wall_s=0.0)


def test_the_anchor_is_the_last_resampling_the_particle_was_live_at() -> None:
    assert anchor(5, (2, 4)) == 4
    assert anchor(4, (2, 4)) == 2  # finished at step 4: not live when step 4 resampled
    assert anchor(2, (2, 4)) == 0
    assert anchor(3, ()) == 0


def test_masking_removes_only_the_rewards_since_the_anchor() -> None:
    # particle 0: reward 1 at step 1 (before the resampling at 2, already reset) and 0.5 at 4
    m = masked_log_weights([3.0, 2.0], [[1.0, 0.0, 0.0, 0.5], [0.0, 0.0, 0.0, 1.0]], (2,), BETA)
    assert m == pytest.approx([3.0 - 0.5 / BETA, 2.0 - 1.0 / BETA])
    with pytest.raises(ValueError, match="log-weights"):
        masked_log_weights([0.0], [[], []], (), BETA)


def test_the_mode_pools_identical_trajectories_and_breaks_ties_by_order() -> None:
    keys = [("a",), ("b",), ("a",), ("c",)]
    assert mode_index(keys, [0.0, 0.0, 0.0, 0.0]) == 0  # "a" twice: a majority vote
    assert mode_index(keys, [0.0, math.log(3.0), 0.0, 0.0]) == 1  # b: 3/6 > a: 2/6
    assert mode_index([("x",), ("y",)], [0.0, 0.0]) == 0
    with pytest.raises(ValueError, match="no trajectories"):
        mode_index([], [])


def test_best_of_n_masked_weights_are_flat_and_its_mode_is_the_majority() -> None:
    # Best-of-N: final weight R / beta; masked, every weight is 0 -> first particle, and the
    # most frequent trajectory is the mode (two particles bought the same bad item)
    bad = ["search[x]", "click[b]", "click[buy now]"]
    good = ["search[x]", "click[g]", "click[buy now]"]
    pool = [traj(0, good, [0, 0, 1.0], 1.0 / BETA), traj(1, bad, [0, 0, 0.2], 0.2 / BETA),
            traj(2, bad, [0, 0, 0.2], 0.2 / BETA)]
    h = hidden_metrics(result(pool), BETA)
    assert h == {"max_weight_masked_reward": pytest.approx(1.0), "mode_reward": pytest.approx(0.2)}


def test_amc_masked_weights_keep_the_value_part_and_skip_failures() -> None:
    # after a resampling at step 2 the weights differ only by -f(anchor)/beta + R/beta
    a, b = ["s", "p", "buy"], ["s", "q", "buy"]
    pool = [traj(0, a, [0, 0, 0.9], (0.9 - 0.8) / BETA),
            traj(1, b, [0, 0, 0.3], (0.3 - 0.1) / BETA),
            traj(2, b, [0, 0, 0.3], 9.0, failure="prior failed")]
    h = hidden_metrics(result(pool, (2,)), BETA)
    # masked: -0.8/beta vs -0.1/beta: the low-value particle (b, 0.3) wins both selections
    assert h == {"max_weight_masked_reward": pytest.approx(0.3), "mode_reward": pytest.approx(0.3)}
    empty = hidden_metrics(result([traj(0, a, [0, 0, 1], 0.0, failure="x")]), BETA)
    assert all(math.isnan(v) for v in empty.values())


def row(task: str, seed: int, bon: dict[str, float], amc: dict[str, float]) -> dict:
    return {"task_id": task, "seed": seed, "bon": {"metrics": bon}, "amc": {"metrics": amc}}


def test_selection_summary_gives_losses_and_the_paired_difference() -> None:
    rows = [row(t, s, {"oracle_best": 1.0, "mode_reward": 0.5, "deployable_reward": math.nan},
                {"oracle_best": 1.0, "mode_reward": 0.5 + 0.1 * (k + 1), "deployable_reward": 1.0})
            for k, t in enumerate("abcd") for s in (0, 1)]
    (mode,) = selection_summary(rows)  # deployable NaN for Best-of-N: not measured, left out
    assert mode["selection"] == "mode_reward"
    assert mode["loss_bon"][0] == pytest.approx(0.5) and mode["loss_bon"][1:] == (
        pytest.approx(0.5), pytest.approx(0.5))  # constant loss: a zero-width interval
    assert mode["loss_amc"][0] == pytest.approx(np.mean([0.4, 0.3, 0.2, 0.1]))
    assert mode["diff"][0] == pytest.approx(0.25) and mode["diff"][1] > 0
    assert mode["p"].p == pytest.approx(2 / 16) and str(mode["p"]) == "0.12"  # 4 tasks: exact
    assert mode["amc"] - mode["bon"] == pytest.approx(0.25)
