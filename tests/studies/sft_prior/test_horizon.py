"""The horizon-16 cell: the round-3 plan-band design with only the horizon (and the
every-step schedule that follows it) changed; its test-set rule's variance components and CPU
reading."""

import numpy as np
import pytest

from studies.sft_prior.cells import cell_config
from studies.sft_prior.dagger3 import band as round3
from studies.sft_prior.horizon import declare_test, run


def test_the_cell_is_round_three_with_horizon_16_and_every_step_resampling() -> None:
    got = cell_config(run.protocol(), 3, run.RUNS / "seed3")
    want = cell_config(round3.cell_protocol(round3.KEPT / "step-000050"), 3,
                       run.RUNS / "seed3")
    assert (got["smc"].pop("max_steps"), want["smc"].pop("max_steps")) == (16, 12)
    assert got["smc"].pop("resample_steps") == list(range(1, 16))
    want["smc"].pop("resample_steps")
    assert got == want
    assert run.protocol()["test_set_rule"]["reserve"] == \
        round3.cell_protocol(round3.KEPT)["test_set_rule"]["reserve"]
    with pytest.raises(ValueError, match="not declared"):
        cell_config(run.protocol(), 4, run.RUNS / "seed4")


def test_variance_components_on_hand_worked_cases() -> None:
    # seeds disagree within each task, tasks agree: all seed noise, no between-task variance
    assert declare_test.variance_components({"a": [1, 0], "b": [1, 0]}) == (0.5, 0.0)
    # seeds agree, tasks differ: no seed noise, the task means' variance is all between
    assert declare_test.variance_components({"a": [1, 1], "b": [0, 0]}) == (0.0, 0.5)
    with pytest.raises(ValueError, match="common number"):
        declare_test.variance_components({"a": [1, 0], "b": [1]})


def test_variance_components_recover_simulated_truth() -> None:
    rng = np.random.default_rng(3)
    true_b, true_w = 0.02, 0.15
    effects = rng.normal(0.1, np.sqrt(true_b), size=4000)
    by_task = {str(i): list(e + rng.normal(0, np.sqrt(true_w), size=4))
               for i, e in enumerate(effects)}
    w, b = declare_test.variance_components(by_task)
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
    need = declare_test.sizing(recs, "smc", "bon", 0.1)["tasks_needed"]
    counts = [need[str(s)] for s in declare_test.SEED_OPTIONS]
    assert counts == sorted(counts, reverse=True) and counts[0] > counts[-1]


def test_cpu_is_read_from_the_time_lines_and_a_log_without_them_is_refused(tmp_path) -> None:
    (tmp_path / "horizon-seed0.log").write_text(
        "noise\n\tUser time (seconds): 100.5\n\tSystem time (seconds): 19.5\n")
    (tmp_path / "horizon-seed1.log").write_text(
        "\tUser time (seconds): 60.0\n\tSystem time (seconds): 60.0\n")
    assert declare_test.cpu_s_per_task_seed(tmp_path, 24) == pytest.approx(240 / 48)
    (tmp_path / "horizon-seed2.log").write_text("killed\n")
    with pytest.raises(SystemExit, match="no /usr/bin/time"):
        declare_test.cpu_s_per_task_seed(tmp_path, 24)


def test_the_kept_cell_recomputes_exactly_on_all_declared_runs() -> None:
    import json

    from studies.sft_prior.horizon import analyse

    r = json.loads((run.EVIDENCE / "result.json").read_text())
    assert r["runs"] == r["declared_runs"] == 24 * 4
    assert set(r["sizing_exploratory"]["tasks_needed"]) == {"4", "8", "12", "16"}
    assert analyse.main(["--check"]) == 0
