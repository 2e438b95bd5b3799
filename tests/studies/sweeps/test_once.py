"""Once means once: a test cell whose result is committed refuses to run again (issue 51)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from studies.sweeps.cell import cell_name, run
from studies.sweeps.config import CellParams
from studies.sweeps.once import AlreadyRun, check_once

ROOT = Path(__file__).resolve().parents[3]


def toy(tmp_path: Path, **kw: object) -> CellParams:
    return CellParams(value="none", max_tasks=1, seeds=(0,), evidence_dir=str(tmp_path / "runs"),
                      out_file=str(tmp_path / "out" / "runs.json"),
                      metrics_file=str(tmp_path / "out" / "metrics.json"), **kw)


def harvest(cell: CellParams, suffix: str = "") -> Path:
    """Commit the cell's record as the harvest does (``<name>.json`` or ``<name>--<exp>``)."""
    dest = Path(cell.evidence_dir) / f"{cell_name(cell)}{suffix}.json"
    shutil.copy(cell.out_file, dest)
    return dest


def test_a_committed_test_cell_refuses_before_any_work_and_a_replication_runs_once(tmp_path):
    (tmp_path / "runs").mkdir()
    cell = toy(tmp_path)
    first = run(cell, track=False)
    harvest(cell)
    Path(cell.out_file).write_text("untouched")
    with pytest.raises(AlreadyRun, match=r"runs once.*-S cell.replication=<new id>"):
        run(cell, track=False)
    assert Path(cell.out_file).read_text() == "untouched"  # refused before writing anything

    rep = cell.model_copy(update={"replication": "r2"})
    second = run(rep, track=False)
    assert second["name"] == f"{first['name']}-rep-r2" and second["rows"] == first["rows"]
    harvest(rep)
    with pytest.raises(AlreadyRun, match="replication 'r2' is already used"):
        run(rep, track=False)
    check_once(cell.model_copy(update={"replication": "r3"}), cell_name(
        cell.model_copy(update={"replication": "r3"})))  # a new id is free


def test_a_harvested_rerun_counts_and_validation_cells_rerun_freely(tmp_path):
    (tmp_path / "runs").mkdir()
    cell = toy(tmp_path)
    (tmp_path / "runs" / f"{cell_name(cell)}--tipsy-weal.json").write_text("{}")
    with pytest.raises(AlreadyRun):
        check_once(cell, cell_name(cell))
    other = cell.model_copy(update={"n": 8})  # another configuration: its own first run
    check_once(other, cell_name(other))
    val = cell.model_copy(update={"split": "validation"})
    (tmp_path / "runs" / f"{cell_name(val)}.json").write_text("{}")
    check_once(val, cell_name(val))


def test_no_evidence_folder_refuses_a_test_cell(tmp_path):
    cell = toy(tmp_path)  # runs/ not created
    with pytest.raises(AlreadyRun, match="no evidence folder"):
        check_once(cell, cell_name(cell))


@pytest.mark.parametrize("name", [
    "test-sciworld-B10-q0.6-b0.1-every2-n4-learned-m4-seeds2",  # ran three times
    "test-webshop-B6-q0.3-b0.1-every2-n4-learned-m8-seeds6"])
def test_the_committed_test_cells_would_refuse_from_sweeps(name):
    rec = json.loads((ROOT / "evidence" / "runs" / f"{name}.json").read_text())
    cell = CellParams.model_validate({**rec["cell"], "evidence_dir": str(ROOT / "evidence/runs")})
    assert cell_name(cell) == name
    with pytest.raises(AlreadyRun):
        check_once(cell, cell_name(cell))
    with pytest.raises(ValueError):
        CellParams(replication="Bad Id")
