"""Paired differences between methods that share (task, seed) runs."""

import math

import numpy as np
import pytest

from amc.pipeline.report import paired_differences, paired_mean_se
from amc.smc.records import TaskResult
from amc.types import Usage


def test_paired_se_is_the_se_of_the_differences():
    rng = np.random.default_rng(0)
    task = rng.normal(size=200)  # shared task difficulty: cancels in the difference
    a, b = task + 0.1 + rng.normal(0, 0.05, 200), task + rng.normal(0, 0.05, 200)
    mean, se = paired_mean_se(a, b)
    d = a - b
    assert mean == pytest.approx(d.mean()) and se == pytest.approx(d.std(ddof=1) / math.sqrt(200))
    unpaired = math.hypot(a.std(ddof=1), b.std(ddof=1)) / math.sqrt(200)
    assert se < unpaired / 10  # why the pairing matters
    assert paired_mean_se(np.ones(5), np.ones(5)) == (0.0, 0.0)
    assert math.isnan(paired_mean_se(np.ones(1), np.zeros(1))[1])


def _result(method, task, seed, success):
    m = {"selected_reward": success, "oracle_best": success, "success": success}
    return TaskResult(task_id=str(task), env="toy", method=method, seed=seed, n_particles=4,
                      config_hash="x", observation0="", steps=[], trajectories=[], metrics=m,
                      usage=Usage(), wall_s=0.0)


def test_paired_differences_match_runs_by_task_and_seed():
    ev = {"methods": {"bon@4": {"role": "bon", "n": 4}, "smc@4+c": {"role": "amc", "n": 4},
                      "smc@8+c": {"role": "amc", "n": 8}, "react": {"role": "react", "n": 1}}}
    bon = [_result("bon@4", t, 0, float(t < 3)) for t in range(6)]
    amc = [_result("smc@4+c", t, 0, float(t < 4)) for t in reversed(range(6))]  # other order
    out = paired_differences(ev, {"bon@4#0": bon, "smc@4+c#0": amc})
    row = out["smc@4+c"]
    assert row["baseline"] == "bon@4" and row["runs"] == 6
    assert row["success"] == pytest.approx(1 / 6)  # only task 3 differs
    assert row["success_se"] == pytest.approx(np.std([0, 0, 0, 1, 0, 0], ddof=1) / math.sqrt(6))
    assert set(out) == {"smc@4+c"}  # no Best-of-8 to pair smc@8 with; react is a baseline
