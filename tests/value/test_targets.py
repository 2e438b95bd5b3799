"""Lower-variance targets: lambda-returns, averaged rollouts, and rewriting a saved dataset."""

from __future__ import annotations

import numpy as np
import pytest

from amc.types import History, Step, Usage
from amc.value.data import DatasetOptions, build_dataset, load_dataset_dir, returns_to_go
from amc.value.targets import averaged, keyed, lambda_returns, retarget


def test_lambda_one_is_the_realised_return_and_zero_is_one_step_td():
    r, v = [0.0, 0.0, 1.0], [0.5, 0.2, 0.7, 0.0]
    assert lambda_returns(r, v, 1.0) == pytest.approx(returns_to_go(r))
    assert lambda_returns(r, v, 0.0) == pytest.approx([0.2, 0.7, 1.0, 0.0])
    lam = 0.5  # by hand: G2 = 1, G1 = 0 + 0.5*0.7 + 0.5*1, G0 = 0.5*0.2 + 0.5*G1
    g1 = 0.5 * 0.7 + 0.5 * 1.0
    assert lambda_returns(r, v, lam) == pytest.approx([0.5 * 0.2 + 0.5 * g1, g1, 1.0, 0.0])
    # a truncated trajectory bootstraps from its last state's value (0 when out of budget)
    assert lambda_returns([0.0], [0.3, 0.6], 0.0) == pytest.approx([0.6, 0.0])
    with pytest.raises(ValueError, match="values"):
        lambda_returns(r, v[:3], 0.5)
    with pytest.raises(ValueError, match="lambda"):
        lambda_returns(r, v, 1.5)


def test_averaged_rollouts_lower_the_variance_and_keep_the_mean():
    assert averaged(1.0, [0.0, 0.0, 1.0]) == 0.5 and averaged(0.0, []) == 0.0
    rng = np.random.default_rng(0)
    p = 0.3
    one = rng.uniform(size=20000) < p
    four = [averaged(float(a), rng.uniform(size=3) < p) for a in one]
    assert np.mean(four) == pytest.approx(p, abs=0.01)
    assert np.var(four) == pytest.approx(np.var(one) / 4, rel=0.1)


def hist(task: str, rewards: list[float]) -> History:
    steps = tuple(Step(f"Action: a{i}", f"a{i}", f"o{i}", r, r > 0, Usage(calls=1), {})
                  for i, r in enumerate(rewards))
    return History(task, f"Goal: {task}", steps)


def test_retarget_rewrites_exactly_the_keyed_rows(tmp_path):
    hs = [hist(f"t{i}", [0.0, 1.0] if i % 2 else [0.0, 0.0]) for i in range(6)]
    hs.append(hist("t0", [1.0]))  # a second trajectory of t0: index 1
    keys = [(t, g, h) for t, g, h in keyed(hs)]
    assert (keys[-1][0], keys[-1][1]) == ("t0", 1)
    opts = DatasetOptions(val_fraction=0.34, tokenizer=None)
    build_dataset(hs, tmp_path, opts)
    new = {(t, g, s): 10.0 * g + s + 0.5 for t, g, h in keys for s in range(h.t + 1)}
    n = retarget(tmp_path, new)
    dsd, _, card = load_dataset_dir(tmp_path)
    rows = [r for split in ("train", "validation") for r in dsd[split]]
    assert n == len(rows) == card["targets_replaced"] and rows
    for r in rows:
        assert r["target"] == pytest.approx(10.0 * r["traj"] + r["step"] + 0.5)
    assert {r["success"] for r in rows} == {True, False}  # outcomes kept
    with pytest.raises(KeyError, match="no new target"):
        retarget(tmp_path, {})
