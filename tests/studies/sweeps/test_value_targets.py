"""The sweep value's target options on small real data: averaged rollouts, TD, SMC states."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from amc.types import History, Step, Usage
from amc.value.data import returns_to_go
from studies.sweeps.config import CellParams, ValueParams
from studies.sweeps.tasks import value_train_tasks
from studies.sweeps.value import rollouts
from studies.sweeps.value_targets import rollout_targets, smc_histories, td_targets

CELL = CellParams(rollouts=4)


def hist(task: str, rewards: list[float]) -> History:
    steps = tuple(Step(f"Action: a{i}", f"a{i}", f"o{i}", r, r > 0, Usage(calls=1), {})
                  for i, r in enumerate(rewards))
    return History(task, "Goal: x", steps)


def test_td_targets_bootstrap_each_trajectory_and_leave_out_skipped_and_excluded():
    hs = [hist("a", [0.0, 1.0]), hist("a", [0.0, 0.0]), hist("b", [1.0]), hist("c", [0.0])]
    values = {("a", 0, 0): 0.1, ("a", 0, 1): 0.6, ("a", 1, 0): 0.2, ("a", 1, 1): 0.3,
              ("b", 0, 0): 0.9, ("c", 0, 0): 0.5}
    got = td_targets(hs, values, 0.0, skip={"c"}, exclude={2})
    assert got == pytest.approx({("a", 0, 0): 0.6, ("a", 0, 1): 1.0, ("a", 0, 2): 0.0,
                                 ("a", 1, 0): 0.3, ("a", 1, 1): 0.0, ("a", 1, 2): 0.0})
    full = td_targets(hs, values, 1.0, skip=set())
    assert [full[("a", 0, t)] for t in range(3)] == returns_to_go([0.0, 1.0])


@pytest.fixture(scope="module")
def tagged():
    vp = ValueParams(q_grid=(0.4,), rollouts=2, max_tasks=3)
    return vp, asyncio.run(rollouts(vp, CELL))


def test_averaged_targets_mix_the_realised_return_with_fresh_rollouts(tagged):
    vp, tg = tagged
    vp4 = vp.model_copy(update={"state_rollouts": 4})
    skip = {tg[0][1].task_id}
    got = asyncio.run(rollout_targets(tg, set(), vp4, CELL, skip))
    again = asyncio.run(rollout_targets(tg, set(), vp4, CELL, skip))
    assert got == again  # seeded per state
    assert not any(k[0] in skip for k in got)
    kept = [h for _, h in tg if h.task_id not in skip]
    assert len(got) == sum(h.t + 1 for h in kept)
    vals = np.array(list(got.values()))
    assert set(np.round(vals * 5)) <= set(range(6))  # (realised + 4 draws) / 5
    assert np.mean((vals > 0) & (vals < 1)) > 0  # not just the 0/1 realised returns
    smc_only = asyncio.run(rollout_targets(tg, set(range(len(tg))), vp, CELL, skip))
    assert set(smc_only) == set(got)  # SMC rows: fresh rollouts only (K' = 4 by default)
    assert set(np.round(np.array(list(smc_only.values())) * 4)) <= set(range(5))


def test_smc_histories_are_amc_pools_of_the_value_training_tasks():
    vp = ValueParams(max_tasks=2, smc_n=3)
    hs = asyncio.run(smc_histories(vp, CELL, 0.4))
    from studies.sweeps.tasks import make_suite

    train = value_train_tasks(make_suite(CELL), CELL)[:2]
    assert sorted({h.task_id for h in hs}) == sorted(train) and len(hs) == 6
    assert all(h.budget is not None and h.t <= h.budget for h in hs)
