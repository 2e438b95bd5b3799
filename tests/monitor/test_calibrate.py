"""Calibration: the pass@k estimator, the verdict on hand-built pools and the CLI."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from amc.cli.main import app
from amc.monitor.calibrate import calibrate, pass_at_k, read_results


def brute_pass_at_k(outcomes: list[bool], k: int) -> float:
    """Fraction of the k-subsets of the rollouts that hold a success (the definition)."""
    subsets = list(itertools.combinations(outcomes, k))
    return sum(any(s) for s in subsets) / len(subsets)


@pytest.mark.parametrize("n,c,k", [(6, 0, 2), (6, 1, 2), (6, 2, 4), (7, 3, 5), (8, 1, 8),
                                   (5, 5, 1), (9, 2, 1)])
def test_pass_at_k_is_the_fraction_of_k_subsets_with_a_success(n, c, k):
    outcomes = [True] * c + [False] * (n - c)
    assert pass_at_k(n, c, k) == pytest.approx(brute_pass_at_k(outcomes, k), abs=1e-12)


def test_pass_at_k_is_unbiased_for_best_of_k():
    # a task with success probability p; G = 15 rollouts per draw; E[pass@4] = 1 - (1 - p)^4
    rng = np.random.default_rng(0)
    for p in (0.05, 0.2, 0.6):
        est = [pass_at_k(15, int(rng.binomial(15, p)), 4) for _ in range(20000)]
        assert np.mean(est) == pytest.approx(1 - (1 - p) ** 4, abs=0.01)


@pytest.mark.parametrize("n,c,k", [(4, 5, 2), (4, -1, 2), (4, 1, 0), (4, 1, 5)])
def test_pass_at_k_rejects_impossible_counts(n, c, k):
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)


def record(task: str, rewards: list[float], seed: int = 0,
           failed: tuple[int, ...] = ()) -> dict:
    return {"task_id": task, "seed": seed, "trajectories": [
        {"total_reward": r, "failure": "endpoint" if i in failed else None}
        for i, r in enumerate(rewards)]}


def test_all_or_nothing_tasks_are_saturated():
    # half the tasks always succeed, half never: Best-of-4 = Best-of-15, gap 0
    recs = [record(f"t{i}", [1.0 if i % 2 else 0.0] * 15) for i in range(6)]
    c = calibrate(recs)
    assert c.pass_lo[0] == pytest.approx(0.5) and c.pass_hi[0] == pytest.approx(0.5)
    assert c.gap.mean == pytest.approx(0.0) and not c.unsaturated


def test_rare_successes_are_unsaturated_and_pooled_over_seeds():
    # one success among 15 rollouts, split over two seeds (8 + 7): pass@4 = 4/15, pass@15 = 1
    recs = [rec for i in range(4)
            for rec in (record(f"t{i}", [1.0] + [0.0] * 7, seed=0),
                        record(f"t{i}", [0.0] * 7, seed=1))]
    c = calibrate(recs)
    assert [t.rollouts for t in c.tasks] == [15] * 4
    assert c.pass_lo[0] == pytest.approx(4 / 15) and c.pass_hi[0] == pytest.approx(1.0)
    assert c.gap.mean == pytest.approx(11 / 15) and c.unsaturated
    assert c.pass_1[0] == pytest.approx(1 / 15)


def test_threshold_and_failed_agents():
    # a dense reward of 0.9 is not a success at threshold 1; a failed agent is not a rollout
    recs = [record("a", [0.9] * 15 + [1.0], failed=(15,)), record("b", [0.9] * 16)]
    c = calibrate(recs)
    assert [t.successes for t in c.tasks] == [0, 0]
    assert [t.rollouts for t in c.tasks] == [15, 16]
    assert calibrate(recs, threshold=0.9).pass_1[0] == pytest.approx(1.0)


def test_too_few_rollouts_is_a_clear_error():
    with pytest.raises(ValueError, match="fewer than 15 rollouts"):
        calibrate([record("a", [1.0] * 8)])
    with pytest.raises(ValueError, match="k_lo < k_hi"):
        calibrate([record("a", [1.0] * 8)], k_lo=8, k_hi=4)


def test_cli_reads_a_results_folder_and_writes_json(tmp_path: Path):
    d = tmp_path / "traj"
    d.mkdir()
    lines = [json.dumps(record(f"t{i}", [1.0] + [0.0] * 7)) for i in range(3)]
    (d / "bon@8__seed0.jsonl").write_text("\n".join(lines) + "\n")
    (d / "bon@8__seed0.failures.jsonl").write_text(json.dumps({"task_id": "x"}) + "\n")
    assert len(read_results(d)) == 3
    out = tmp_path / "cal.json"
    res = CliRunner().invoke(app, ["calibrate", str(d), "--k-lo", "2", "--k-hi", "8",
                                   "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "unsaturated" in res.output
    got = json.loads(out.read_text())
    assert got["n_tasks"] == 3 and got["pass_lo"][0] == pytest.approx(2 / 8)
    bad = CliRunner().invoke(app, ["calibrate", str(tmp_path / "none")])
    assert bad.exit_code != 0 and "no results files" in bad.output


def stepped(task: str, success_step: list[int | None], budget: int = 5) -> dict:
    """A record whose trajectory i succeeds at step success_step[i] (None: never)."""
    trajs = []
    for s in success_step:
        n = budget if s is None else s
        trajs.append({"total_reward": 0.0 if s is None else 1.0, "failure": None,
                      "steps": [{"reward": 1.0 if (k + 1) == s else 0.0} for k in range(n)]})
    return {"task_id": task, "seed": 0, "budget": budget, "trajectories": trajs}


def test_a_shorter_budget_counts_only_early_successes():
    # 15 rollouts: 3 succeed at step 2, 6 at step 4, 6 never
    recs = [stepped("t", [2] * 3 + [4] * 6 + [None] * 6)]
    assert calibrate(recs).pass_1[0] == pytest.approx(9 / 15)
    assert calibrate(recs, budget=4).pass_1[0] == pytest.approx(9 / 15)
    assert calibrate(recs, budget=3).pass_1[0] == pytest.approx(3 / 15)
    assert calibrate(recs, budget=1).pass_1[0] == 0.0
    with pytest.raises(ValueError, match="cannot be calibrated"):
        calibrate(recs, budget=6)


@pytest.mark.parametrize("conflict", [False, True])
def test_a_task_recorded_twice_is_refused_with_file_and_line(tmp_path: Path, conflict: bool):
    """Issue 64: duplicated lines gave Best-of-8 from 4 distinct rollouts per task."""
    d = tmp_path / "traj"
    d.mkdir()
    lines = [json.dumps(record(f"t{i}", [1.0] + [0.0] * 3)) for i in range(2)]
    again = json.dumps(record("t0", [0.0] * 4)) if conflict else lines[0]
    (d / "bon@4__seed0.jsonl").write_text("\n".join([*lines, again]) + "\n")
    how = "with a different result" if conflict else "again"
    res = CliRunner().invoke(app, ["calibrate", str(d), "--k-lo", "2", "--k-hi", "4"])
    assert res.exit_code == 2, res.output
    assert res.output.strip() == (
        f"error: {d / 'bon@4__seed0.jsonl'}:3: task 't0' is recorded twice (line 1, then "
        f"{how}); the file is damaged: delete that line (or move the file away; its tasks "
        "then rerun) and run again")
    (d / "bon@4__seed0.jsonl").write_text("\n".join(lines) + "\n")
    res = CliRunner().invoke(app, ["calibrate", str(d), "--k-lo", "2", "--k-hi", "8"])
    assert res.exit_code == 2 and res.output.startswith("error: --k-hi: 2 task(s) have fewer")


def test_one_seed_in_two_methods_files_is_refused(tmp_path: Path):
    """A bon@4 file left beside bon@8 (collect.rollouts changed): the same seed's rollouts."""
    d = tmp_path / "traj"
    d.mkdir()
    for name, g in (("bon@4__seed0.jsonl", 4), ("bon@8__seed0.jsonl", 8)):
        (d / name).write_text(json.dumps(record("t0", [1.0] + [0.0] * (g - 1))) + "\n")
    (d / "bon@8__seed1.jsonl").write_text(json.dumps(record("t0", [0.0] * 8, seed=1)) + "\n")
    with pytest.raises(ValueError, match=r"bon@8__seed0.jsonl: task 't0' of seed 0 is in "
                                         r"bon@4__seed0.jsonl too"):
        read_results(d)
    (d / "bon@4__seed0.jsonl").unlink()
    assert len(read_results(d)) == 2  # seeds 0 and 1 of one method pool as before
