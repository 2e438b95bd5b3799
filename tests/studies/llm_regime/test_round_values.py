"""Each round's value on one fixed held-out set: states, labels, measures, resumption."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from amc.pipeline import evaluate, rounds
from amc.pipeline.params import load_params
from studies.llm_regime import round_values
from tests.pipeline.conftest import MODEL, TOY_PARAMS, register_version


def _trained(p: object, version: str) -> None:
    rec = rounds.open_round(p)  # type: ignore[arg-type]
    rounds.record_step(p, int(rec["round"]), "train",  # type: ignore[arg-type]
                       {"model": MODEL, "version": version})
    rounds.close_round(p, int(rec["round"]))  # type: ignore[arg-type]


def test_every_trained_round_is_scored_on_the_same_states_and_a_rerun_adds_only_new_ones(
        workdir: Path) -> None:
    good = register_version(workdir, 1.0)  # the exact soft value: ranks states rightly
    Path("rounds.yaml").write_text(yaml.safe_dump(
        {**TOY_PARAMS, "rounds": {"enabled": True, "ledger_dir": "runs/r/ledger"}}))
    p = load_params("rounds.yaml")
    evaluate.run(p)  # bon@8 over 10 test tasks x 2 seeds: the held-out prior rollouts
    eval_dir = Path("data/eval")
    # gzip one file, as the repository keeps them: both forms are read
    f = eval_dir / "bon@8__seed1.jsonl"
    f.with_suffix(".jsonl.gz").write_bytes(gzip.compress(f.read_bytes()))
    f.unlink()
    (eval_dir / "bon@8__seed0.failures.jsonl").write_text('{"task_id": "x"}\n')  # not results
    results = round_values.load_results(eval_dir, "bon@8")
    assert len(results) == 20 and {r.seed for r in results} == {0, 1}
    s = round_values.held_out_states(results, 0.8)
    assert s.rollouts == 20 * 8 and len(s.histories) == sum(
        len(tr.steps) for r in results for tr in r.trajectories)
    # a state's label is its rollout's outcome; its step is the steps it has taken
    assert all(g[1] == h.t for g, h in zip(s.groups, s.histories, strict=True))
    assert np.allclose(s.reward_so_far + s.target,
                       [sum(x.reward for x in tr.steps) for r in results
                        for tr in r.trajectories for _ in tr.steps])
    assert 0 < s.success.mean() < 1

    out = Path("heldout.json")
    _trained(p, good)
    doc = round_values.score_rounds(p, eval_dir, out, "bon@8")
    bad = register_version(workdir, -0.5)  # a later round whose value is inverted
    _trained(p, bad)
    before = out.read_text()
    doc = round_values.score_rounds(p, eval_dir, out, "bon@8")
    r0, r1 = doc["rounds"]
    assert json.loads(before)["rounds"][0] == r0  # round 0 kept, not rescored
    assert r0["value"] == f"models:/{MODEL}/{good}" and r1["round"] == 1
    assert r0["auc_within"] > 0.7 > r1["auc_within"]  # the same states tell them apart
    assert {"auc_within_step1", "auc_within_step2"} <= set(r0)  # the toy's resample steps
    assert doc["states"] == len(s.histories) and doc["tasks"] == 10
    mtime = out.stat().st_mtime_ns
    round_values.score_rounds(p, eval_dir, out, "bon@8")
    assert out.stat().st_mtime_ns == mtime  # nothing new: nothing written

    # other held-out states are never mixed into the same file
    (eval_dir / "bon@8__seed0.jsonl").unlink()
    with pytest.raises(ValueError, match="scored other states"):
        round_values.score_rounds(p, eval_dir, out, "bon@8")
    with pytest.raises(FileNotFoundError, match="no bon@4"):
        round_values.load_results(eval_dir, "bon@4")
