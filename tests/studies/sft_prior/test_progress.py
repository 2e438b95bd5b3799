"""The progress-value cell: its run is the declared one; its test set is declared only by the
rule committed with it (goal met, sized on the cell's own per-task differences, drawn from the
test reserve, timed from the cell's logs), and only once."""

import json
from pathlib import Path

import pytest

from amc.config import RunConfig, validate
from studies.sft_prior.progress import declare_test as dt
from studies.sft_prior.progress.run import config, protocol
from tests.studies.sft_prior.test_multistep import record, write


def test_the_run_is_the_declared_cell() -> None:
    p, run = protocol(), validate(RunConfig, config(0), "progress")
    smc = p["cell"]["arms"]["smc@4+progress"]
    assert run.prior.options["dtype"] == "bfloat16"
    assert list(run.smc.resample_steps) == smc["resample_steps"] == list(range(1, 8))
    assert run.values["progress"].name == "textcraft-progress"
    assert run.methods == ("smc@4+progress", "bon@4") and list(run.seeds) == [0]
    with pytest.raises(ValueError, match="seed 3 is not declared"):
        config(3)


def test_per_task_differences_average_seeds_within_a_task() -> None:
    recs = [record("a", 0, "smc", 1, 32), record("a", 1, "smc", 0, 32),
            record("a", 0, "bon", 0, 32), record("a", 1, "bon", 0, 32),
            record("b", 0, "smc", 1, 32), record("b", 0, "bon", 1, 32),
            record("c", 0, "smc", 1, 32)]  # c has no Best-of-N run: unpaired
    assert dt.per_task_differences(recs, "smc", "bon") == [0.5, 0.0]


def test_seconds_per_particle_step_reads_each_finished_arms_last_line(tmp_path: Path) -> None:
    (tmp_path / "progress-seed0.log").write_text(
        "[1/2] smc@4+progress s0: 29/30 tasks, 330 s, ETA 11 s\n"
        "[1/2] smc@4+progress s0: 30/30 tasks, 342 s, ETA 0 s\n"
        "[2/2] bon@4 s0: 30/30 tasks, 258 s, ETA 0 s\n")
    (tmp_path / "progress-seed1.log").write_text("[1/2] smc@4+progress s1: 3/30 tasks, 40 s\n")
    recs = [record("a", 0, "smc", 1, 100), record("a", 0, "bon", 1, 200)]
    assert dt.measured_s_per_particle_step(recs, tmp_path) == pytest.approx(600 / 300)


def _cell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, goal: bool) -> None:
    monkeypatch.setattr(dt, "OUT", tmp_path / "test.json")
    monkeypatch.setattr(dt, "EVIDENCE", tmp_path)
    monkeypatch.setattr(dt, "REPO", tmp_path)
    (tmp_path / "result.json").write_text(json.dumps({"goal_met": goal}))
    tasks = [str(i) for i in range(30)]
    smc = [record(t, s, "smc@4+progress", float(i % 3 != 0 or s == 0), 32)
           for i, t in enumerate(tasks) for s in (0, 1)]
    bon = [record(t, s, "bon@4", float(i % 2 == 0 and s == 0), 32)
           for i, t in enumerate(tasks) for s in (0, 1)]
    write(tmp_path, "smc@4+progress__seed0.jsonl.gz", smc)
    write(tmp_path, "bon@4__seed0.jsonl.gz", bon)
    (tmp_path / "progress-seed0.log").write_text("] smc@4+progress s0: 30/30 tasks, 600 s\n"
                                                 "] bon@4 s0: 30/30 tasks, 600 s\n")


def test_no_test_set_unless_the_goal_was_met(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    _cell(tmp_path, monkeypatch, goal=False)
    with pytest.raises(SystemExit, match="did not meet its goal"):
        dt.declare(tmp_path)


def test_the_declared_set_is_sized_on_the_cell_and_drawn_from_the_reserve_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _cell(tmp_path, monkeypatch, goal=True)
    d = dt.declare(tmp_path)
    diffs = dt.per_task_differences(dt.read(tmp_path, "*.jsonl.gz"), "smc@4+progress", "bon@4")
    assert d["room"] == pytest.approx(sum(diffs) / len(diffs)) and d["room"] > 0
    reserve = json.loads(dt.HELDOUT.read_text())["tasks"]["test-reserve-depth2"]
    assert len(d["tasks"]) == max(d["power"]["tasks_needed_t"], dt.MIN_TASKS)
    assert set(d["tasks"]) <= set(reserve) and len(set(d["tasks"])) == len(d["tasks"])
    assert not set(d["tasks"]) & set(protocol()["cell"]["tasks"])  # never a validation task
    assert d["power"]["effect"] == pytest.approx(d["room"] / 2)
    steps = len(d["tasks"]) * 2 * 2 * 4 * 8
    assert d["cpu"]["particle_steps_at_most"] == steps
    assert d["cpu"]["measured_s_per_particle_step"] == pytest.approx(1200 / (120 * 32))
    assert f"| {len(d['tasks'])} | 2 |" in dt.markdown(d)
    (tmp_path / "test.json").write_text("{}")
    with pytest.raises(SystemExit, match="already declared"):
        dt.declare(tmp_path)
