"""Test-set sizing with seeds per task: the variance components, the tasks needed per number
of seeds, and the CPU read from a cell's seed logs."""

import numpy as np
import pytest

from studies.sft_prior import sizing

OPTIONS = (4, 8, 12, 16)
RESERVE = [f"r{i}" for i in range(20)]


def test_variance_components_on_hand_worked_cases() -> None:
    # seeds disagree within each task, tasks agree: all seed noise, no between-task variance
    assert sizing.variance_components({"a": [1, 0], "b": [1, 0]}) == (0.5, 0.0)
    # seeds agree, tasks differ: no seed noise, the task means' variance is all between
    assert sizing.variance_components({"a": [1, 1], "b": [0, 0]}) == (0.0, 0.5)
    with pytest.raises(ValueError, match="common number"):
        sizing.variance_components({"a": [1, 0], "b": [1]})


def test_variance_components_recover_simulated_truth() -> None:
    rng = np.random.default_rng(3)
    true_b, true_w = 0.02, 0.15
    effects = rng.normal(0.1, np.sqrt(true_b), size=4000)
    by_task = {str(i): list(e + rng.normal(0, np.sqrt(true_w), size=4))
               for i, e in enumerate(effects)}
    w, b = sizing.variance_components(by_task)
    assert w == pytest.approx(true_w, rel=0.05)
    assert b == pytest.approx(true_b, abs=0.006)  # the naive sd4^2 would read 0.0575


def test_more_seeds_never_need_more_tasks() -> None:
    recs = []
    rng = np.random.default_rng(0)
    for t in range(24):
        for s in range(4):
            for m, p in (("smc", 0.5), ("bon", 0.3)):
                recs.append({"task_id": str(t), "seed": s, "method": m,
                             "metrics": {"success": float(rng.random() < p)},
                             "usage": {"calls": 1}})
    need = sizing.sizing(recs, "smc", "bon", 0.1, OPTIONS, 20)["tasks_needed"]
    counts = [need[str(s)] for s in OPTIONS]
    assert counts == sorted(counts, reverse=True) and counts[0] > counts[-1]


def test_cpu_is_read_from_the_time_lines_and_a_log_without_them_is_refused(tmp_path) -> None:
    (tmp_path / "horizon-seed0.log").write_text(
        "noise\n\tUser time (seconds): 100.5\n\tSystem time (seconds): 19.5\n")
    (tmp_path / "horizon-seed1.log").write_text(
        "\tUser time (seconds): 60.0\n\tSystem time (seconds): 60.0\n")
    assert sizing.cpu_s_per_task_seed(tmp_path, "horizon-seed*.log", 24) == pytest.approx(240 / 48)
    (tmp_path / "horizon-seed2.log").write_text("killed\n")
    with pytest.raises(SystemExit, match="no /usr/bin/time"):
        sizing.cpu_s_per_task_seed(tmp_path, "horizon-seed*.log", 24)


def _cell(tmp_path, user_s: float):
    rng = np.random.default_rng(1)
    tasks = [str(t) for t in range(24)]
    recs = [{"task_id": t, "seed": s, "method": m, "usage": {"calls": 1},
             "metrics": {"success": float(rng.random() < p)}}
            for t in tasks for s in range(4) for m, p in (("smc", 0.6), ("bon", 0.3))]
    p = {"name": "c", "prior": {"options": {}}, "test_set_rule": {"reserve": RESERVE},
         "cell": {"env_options": {}, "horizon": 12, "n": 4, "tasks": tasks,
                  "arms": {"smc": {}, "bon": {}}}}
    (tmp_path / "c-seed0.log").write_text(f"\tUser time (seconds): {user_s}\n"
                                          "\tSystem time (seconds): 0\n")
    return p, {"goal_met": True, "difference": {"mean": 0.6}}, recs


def test_declare_takes_the_first_seeds_option_that_fits_the_reserve_and_the_cpu(tmp_path) -> None:
    p, result, recs = _cell(tmp_path, 24 * 36.0)  # 36 CPU s per (task, seed)
    rule = sizing.Rule((2, 4, 8, 16), 3, "c-seed*.log", 7, cpu_limit_h=1.0)
    d = sizing.declare(p, result, recs, tmp_path, rule)
    need = d["sizing"]["tasks_needed"]
    fits = [s for s in rule.seed_options if need[str(s)] <= 20 and need[str(s)] * s * 36 <= 3600]
    assert fits[0] != rule.seed_options[0]  # the first option does not fit: the rule moves on
    assert d["seeds"] == list(range(fits[0])) and len(d["tasks"]) == need[str(fits[0])]
    assert len(set(d["tasks"])) == len(d["tasks"]) and set(d["tasks"]) <= set(RESERVE)
    assert d["cpu"]["s_per_task_seed"] == pytest.approx(36.0)
    with pytest.raises(SystemExit, match="no seeds-per-task option fits"):
        sizing.declare(p, result, recs, tmp_path, sizing.Rule((2, 4), 3, "c-seed*.log", 7,
                                                              cpu_limit_h=1e-4))
    with pytest.raises(SystemExit, match="did not meet its goal"):
        sizing.declare(p, {**result, "goal_met": False}, recs, tmp_path, rule)


def test_declare_main_writes_once(tmp_path) -> None:
    (tmp_path / "test.json").write_text("{}\n")
    with pytest.raises(SystemExit, match="already declared"):
        sizing.declare_main(tmp_path, tmp_path, {}, sizing.Rule((4,), 3, "x*.log", 1), tmp_path)
    assert (tmp_path / "test.json").read_text() == "{}\n"
