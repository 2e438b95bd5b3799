"""WebShop's learned value in the sweeps: its data, rendering, stage, cell guard and harvest."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from studies.sweeps.bench import make_bench_suite
from studies.sweeps.cell import SPLIT_FILE, check_value_split, split_record
from studies.sweeps.config import BenchValueParams, CellParams, load_sweep_params
from studies.sweeps.tasks import validation_tasks

REPO = Path(__file__).resolve().parents[3]
WEB = BenchValueParams()


@pytest.fixture(scope="module")
def web_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A scratch sweeps/ directory (the fixture catalog is written under its work/)."""
    import os

    d = tmp_path_factory.mktemp("web")
    old = Path.cwd()
    os.chdir(d)
    yield d
    os.chdir(old)


def test_the_params_file_declares_the_webshop_value_on_the_cells_split():
    params = load_sweep_params(REPO / "sweeps/params.yaml")
    w = params.value_webshop
    assert split_record(w.cell) == split_record(WEB.cell)  # the file spells out the defaults
    assert w.cell.benchmark == "webshop" and w.cell.budget == 6 and w.cell.val_sample == "random"
    assert w.value.out_dir == "models/value-webshop" and not w.value.show_budget
    from studies.sweeps.grid import GRIDS

    # trained on the learned cells' own prior: planner-mix at the cells' skills
    assert w.value.q_grid == GRIDS["webshop"].value_q["learned"]
    assert params.value.out_dir == "models/value"  # TextCraft's value is untouched
    from studies.sweeps.value import section

    assert section(params, "value") == (params.value, params.cell)
    assert section(params, "value_webshop") == (w.value, w.cell)


def test_webshop_rows_render_the_instruction_without_a_budget_and_graded_targets(web_dir: Path):
    from amc.value.data import build_rows, load_tokenizer
    from amc.value.targets import keyed
    from studies.sweeps.value import dataset_options, rollouts

    vp = WEB.value.model_copy(update={"rollouts": 3, "max_tasks": 4, "q_grid": (0.6,)})
    tagged = asyncio.run(rollouts(vp, WEB.cell))
    suite = make_bench_suite(WEB.cell)
    val = set(validation_tasks(suite, WEB.cell))
    assert tagged and not {h.task_id for _, h in tagged} & val  # none of the validation goals
    assert not {h.task_id for _, h in tagged} & set(suite.task_ids("test"))
    assert all(h.budget == 6 for _, h in tagged)  # the cells' one budget, not a plan length
    opts = dataset_options(vp, "webshop").model_copy(update={"val_fraction": 0.0,
                                                              "test_fraction": 0.0})
    rows = build_rows([h for _, h in tagged], opts, load_tokenizer("minilm"))["train"]
    env = suite.make()
    for r in rows:
        env.reset(r["task_id"])
        assert f"=== INSTRUCTION ===\n{env.instruction}" in r["text"]  # WebShop's extractor
        assert "[STEPS LEFT]" not in r["text"]  # no budget, so no plan length, is shown
    # targets: the graded score still to come (the purchase's), so some lie strictly in (0, 1)
    hist = {(t, g): h for t, g, h in keyed([h for _, h in tagged])}
    starts = [r for r in rows if r["step"] == 0]
    assert len(starts) == len(tagged)
    assert all(np.isclose(r["target"], hist[(r["task_id"], r["traj"])].total_reward)
               for r in starts)
    assert any(0 < r["target"] < 1 for r in rows)


def test_a_learned_webshop_cell_needs_a_webshop_value_of_its_own_split(tmp_path: Path):
    cell = CellParams(benchmark="webshop", budget=6, val_tasks=48, value="learned",
                      value_model=str(tmp_path))
    with pytest.raises(ValueError, match="not a webshop value"):
        check_value_split(cell)
    (tmp_path / SPLIT_FILE).write_text(json.dumps(split_record(cell)))
    check_value_split(cell)
    for other in ({"val_tasks": 40}, {"val_sample": "tail"}, {"budget": 8}):
        with pytest.raises(ValueError, match="another split"):
            check_value_split(cell.model_copy(update=other))
    with pytest.raises(ValueError, match="another split"):  # a WebShop value serves no SciWorld
        check_value_split(cell.model_copy(update={"benchmark": "sciworld"}))
    check_value_split(CellParams(value="learned", value_model=str(tmp_path / "none")))  # TextCraft


@pytest.mark.slow
def test_the_webshop_value_stage_and_a_learned_cell_at_toy_size(web_dir: Path):
    from studies.sweeps.cell import dir_hash
    from studies.sweeps.cell import run as run_cell
    from studies.sweeps.value import run

    vp = WEB.value.model_copy(update={
        "rollouts": 1, "max_tasks": 8, "q_grid": (0.3, 0.6), "sizes": (30,), "epochs": 2,
        "max_length": 128, "work_dir": "work/v", "out_dir": "models/v", "quality_file": "q.json"})
    rec = run(vp, WEB.cell.model_copy(update={"rollouts": 2}), track=False)  # ceiling's M
    saved = json.loads(Path("q.json").read_text())
    assert saved["model_hash"] == rec["model_hash"] == dir_hash("models/v")
    assert saved["benchmark"] == "webshop" and saved["split"] == split_record(WEB.cell)
    assert not saved["data"]["show_budget"] and saved["data"]["splits"]["test"]["rows"] > 0
    assert json.loads(Path("models/v", SPLIT_FILE).read_text()) == split_record(WEB.cell)
    assert np.isfinite(rec["final"]["test_pearson"]) and rec["ceiling"]["rollouts"] == 2
    off = rec["offline"]
    assert off["learned"]["states"] == off["ceiling"]["states"] > 0
    assert "doomed_states" not in off["learned"]  # no planner mask off TextCraft
    cell = CellParams(**{**WEB.cell.model_dump(), "value": "learned", "value_model": "models/v",
                         "split": "validation", "max_tasks": 1, "seeds": (0,), "n": 2,
                         "beta": 0.1, "out_file": "runs.json", "metrics_file": "m.json"})
    out = run_cell(cell, track=False)
    assert out["value_model_hash"] == rec["model_hash"] and len(out["rows"]) == 1
    row = out["rows"][0]
    assert "deployable_reward" in row["amc"]["metrics"]  # the value selects the answer


def test_harvest_keeps_the_webshop_value_beside_textcraft_s(tmp_path: Path):
    from studies.sweeps.harvest import harvest

    repo = tmp_path / "repo"
    (repo / "sweeps/out").mkdir(parents=True)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git[:3], "init", "-q"], check=True)
    rows = [{"task_id": "0", "seed": 0, "bon": {"metrics": {}}, "amc": {"metrics": {}}}]
    cal = {"method": "platt", "params": {"a": 1.0, "b": 0.0}}
    files = {"runs.json": {"name": "cell", "cell": {}, "rows": rows, "value_model_hash": "w"},
             "value_quality.json": {"model_hash": "t"},
             "value_quality_webshop.json": {"model_hash": "w", "calibration": cal}}
    for name, obj in files.items():
        (repo / "sweeps/out" / name).write_text(json.dumps(obj))
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "exp"], check=True)
    subprocess.run([*git, "update-ref", "refs/exps/aa/bb/exp0", "HEAD"], check=True)
    harvest(repo, tmp_path / "ev")
    got = json.loads((tmp_path / "ev/runs/cell.json").read_text())["value_model_hash"]
    assert got.startswith("w-platt-")  # the WebShop value's id, with its calibration
    assert {p.stem for p in (tmp_path / "ev/values").iterdir()} == {"t", got}
    assert json.loads((tmp_path / "ev/value_quality_webshop.json").read_text())["model_hash"] == "w"


def test_the_params_file_declares_the_sciworld_value_on_the_cells_split():
    from studies.sweeps.grid import GRIDS, cell
    from studies.sweeps.value import section

    params = load_sweep_params(REPO / "sweeps/params.yaml")
    sw = params.value_sciworld
    g = GRIDS["sciworld"]
    learned = CellParams.model_validate(cell(g, "test", q=0.6, n=4, beta=0.1, value="learned"))
    # the stage's split is the learned cells' own, so check_value_split passes on its output
    assert split_record(sw.cell) == split_record(learned)
    assert sw.value.q_grid == g.value_q["learned"] and not sw.value.ceiling
    assert sw.value.out_dir == learned.value_model == "models/value-sciworld"
    assert section(params, "value_sciworld") == (sw.value, sw.cell)
    assert sw == type(sw).model_validate(sw.model_dump())  # the file spells out valid keys
