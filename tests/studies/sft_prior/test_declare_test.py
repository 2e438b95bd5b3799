"""The fine-tuned prior's test-set declaration: sizing, the seeds rule, the reserve only."""

import json
import math
import shutil
from pathlib import Path

import pytest

from studies.sft_prior import declare_test as dt

REPO = Path(__file__).resolve().parents[3]
HELD = json.loads((REPO / "studies/sft_prior/heldout.json").read_text())


def test_cpu_per_particle_step_reads_the_benchmarks_row_at_n() -> None:
    text = (REPO / "docs/benchmarks.md").read_text()
    at4, at8 = dt.cpu_per_particle_step(4, text), dt.cpu_per_particle_step(8, text)
    assert at4 > 0 and at8 > 0 and at4 != at8  # the N column is read, not the first row
    with pytest.raises(ValueError, match="N = 3"):
        dt.cpu_per_particle_step(3, text)


def test_more_seeds_per_task_need_fewer_tasks_and_the_rule_takes_the_fewest_runs() -> None:
    opts = dt.options(0.6, 0.1, pool=60, cpu_h_per_run=0.01)
    tasks = [o["tasks"] for o in opts]
    assert tasks == sorted(tasks, reverse=True) and tasks[0] > tasks[-1]
    assert all(o["t_power"] >= 0.8 or o["tasks"] == dt.MIN_TASKS for o in opts)
    best = dt.pick(opts)
    assert best is not None and best["fits"]
    assert best["runs"] == min(o["runs"] for o in opts if o["fits"])
    # an option over the CPU limit is never taken, however few its runs
    costly = dt.options(0.6, 0.1, pool=60, cpu_h_per_run=dt.CPU_LIMIT_H)
    assert dt.pick(costly) is None


def test_a_declaration_draws_only_from_the_depths_test_reserve() -> None:
    # checkpoint 50's two kept depth-2 (task, seed) runs stand in for a chosen cell
    chosen = {"checkpoint": 50, "depth": 2, "horizon": 10, "n": 4, "step": 2, "beta": 1.0,
              "room": 0.2, "room_lo": 0.05, "room_hi": 0.35, "p": 0.01}
    d = dt.declaration({"chosen": chosen}, HELD)
    assert d["declared"]
    t = d["test"]
    reserve = set(HELD["tasks"]["test-reserve-depth2"])
    assert set(t["tasks"]) <= reserve and len(t["tasks"]) == d["sizing"]["chosen"]["tasks"]
    assert not set(t["tasks"]) & set(HELD["tasks"]["validation-depth2"])
    assert t["seeds"] == list(range(d["sizing"]["chosen"]["seeds"]))
    assert math.isclose(d["sizing"]["effect"], 0.1)
    calls = d["sizing"]["calls_per_task_seed"]
    assert calls["smc@4+rollout"] > calls["smc@4+zero-shot"] > calls["bon@4"] > 0
    assert "Declared" in dt.markdown(d)


def test_a_later_rounds_cell_and_adapter_are_the_ones_declared(tmp_path: Path) -> None:
    # the same kept runs, read from another folder under a DAgger label: the label, the cell
    # and the adapter given are what the declaration uses (none of the first search's paths)
    cell = tmp_path / "cell"
    shutil.copytree(dt.EVIDENCE / dt.step_dir(50) / "depth2", cell)
    chosen = {"checkpoint": 1, "checkpoint_label": "dagger1-100", "depth": 2, "horizon": 10,
              "n": 4, "step": 2, "beta": 1.0, "room": 0.2, "room_lo": 0.05, "room_hi": 0.35,
              "p": 0.01}
    d = dt.declaration({"chosen": chosen}, HELD, kept=tmp_path / "none", cell=cell,
                       adapter="sft/kept/textcraft-dagger1/step-000100")
    assert d["sizing"]["regime"]["checkpoint"] == "dagger1-100"
    assert d["test"]["prior"]["adapter"] == "sft/kept/textcraft-dagger1/step-000100"
