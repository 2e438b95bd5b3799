"""The confirmatory runs' inputs: WebShop's fresh goals and the declared value's id."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from studies.confirm import run
from studies.confirm.protocol import draw_order, load, webshop_tasks

ROOT = Path(__file__).resolve().parents[3]


def test_webshop_goals_are_fresh_and_drawn_in_the_declared_order(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The drawn goals come from the declared catalog seed, none has the text of a goal of
    the excluded catalogs (all of which earlier cells or the value used), they are the first
    n of the seed's permutation of the remaining ids, and the draw repeats exactly."""
    monkeypatch.setattr(run, "CATALOGS", tmp_path)
    p = load(ROOT / "studies/confirm/webshop.json")
    t = p.tasks
    suite = run.webshop_suite(int(t["fixture_seed"]), int(t["n_products"]), 6)
    used = {g["instruction_text"] for k in t["exclude_fixture_seeds"]
            for g in run.webshop_suite(int(k), int(t["n_products"]), 6).catalog.goals}
    goals = [g["instruction_text"] for g in suite.catalog.goals]
    clash = {str(i) for i, g in enumerate(goals) if g in used}
    assert clash, "the seeds' catalogs share some goal texts: the exclusion is exercised"
    drawn = webshop_tasks(p, suite, used)
    assert len(drawn) == int(t["n"]) >= 100
    assert not {d["task_id"] for d in drawn} & clash
    assert all(d["goal"] == goals[int(d["task_id"])] and d["goal"] not in used for d in drawn)
    pool = [str(i) for i in range(len(goals)) if str(i) not in clash]
    assert [d["task_id"] for d in drawn] == draw_order(pool, int(t["seed"]))[: int(t["n"])]
    assert webshop_tasks(p, suite, used) == drawn


def test_the_value_id_covers_the_calibration(tmp_path: Path) -> None:
    """A declared id with a calibration digest (the sweep records' form) is only matched by
    a model folder with that calibration: the model hash alone does not cover it."""
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "value_config.json").write_text(json.dumps({"model": {"x": 1}}))
    bare = run.value_id(tmp_path)
    assert len(bare) == 16 and "-" not in bare
    (tmp_path / "calibration.json").write_text(json.dumps(
        {"method": "isotonic", "params": {"x": [0.1, 0.2], "y": [0.0, 1.0]}}))
    first = run.value_id(tmp_path)
    assert first.startswith(bare + "-isotonic-")
    (tmp_path / "calibration.json").write_text(json.dumps(
        {"method": "isotonic", "params": {"x": [0.1, 0.2], "y": [0.0, 0.9]}}))
    assert run.value_id(tmp_path) not in (bare, first)
