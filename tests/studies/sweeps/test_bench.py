"""Sweep cells on WebShop: the fixture suite, fixed budgets, splits, rows with hidden selections."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import pytest

from studies.sweeps import bench
from studies.sweeps.bench import bench_budget, make_bench_suite
from studies.sweeps.cell import cell_name, run_cell
from studies.sweeps.config import CellParams
from studies.sweeps.tasks import split_tasks


@pytest.fixture()
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # the fixture catalog is written under work/, as in sweeps/
    return tmp_path


def web(**kw) -> CellParams:
    return CellParams(benchmark="webshop", budget=6, val_tasks=48, **kw)


def test_webshop_cells_use_the_fixture_catalog_the_paper_split_and_one_budget(in_tmp):
    suite = make_bench_suite(web())
    assert (in_tmp / bench.FIXTURE_DIR / "items_shuffle_1000.json").is_file()
    test, val = split_tasks(suite, web()), split_tasks(suite, web(split="validation"))
    assert test == [str(i) for i in range(5, 55)] and len(val) == 48
    assert not set(test) & set(val)
    assert suite.max_steps == 6  # the environment's own step limit is the cell's budget
    assert {bench_budget(suite, web(), t) for t in test} == {6}  # not the plan's length
    with pytest.raises(ValueError, match="fixed budget"):
        make_bench_suite(CellParams(benchmark="webshop"))


def test_a_task_file_replaces_the_splits(in_tmp):
    (in_tmp / "tasks.json").write_text(json.dumps({"train": [7, 8, 9], "test": [1, 2]}))
    suite = make_bench_suite(web(task_file="tasks.json"))
    assert suite.task_ids("test") == ["1", "2"] and suite.task_ids("train") == ["7", "8", "9"]
    (in_tmp / "bad.json").write_text(json.dumps({"test": [1]}))
    with pytest.raises(ValueError, match="a task file is"):
        make_bench_suite(web(task_file="bad.json"))
    with pytest.raises(ValueError, match="task_file"):
        make_bench_suite(CellParams(benchmark="sciworld", budget=10))


def test_cell_names_of_other_benchmarks_carry_the_budget_not_a_depth():
    assert cell_name(web(q=0.3, beta=0.1, n=8, rollout_final=False)) == (
        "test-webshop-B6-q0.3-b0.1-every2-n8-rollout-m8-seeds6")
    # the ceiling whose rollouts end with the forced buy is another cell than those before it
    assert cell_name(web(q=0.3, beta=0.1, n=8)) == (
        "test-webshop-B6-q0.3-b0.1-every2-n8-rollout-m8-seeds6-ff")
    assert cell_name(web(q=0.3, beta=0.1, n=8, value="none")).endswith("-none-m8-seeds6")
    assert cell_name(CellParams()).startswith("test-d2-q0.4-b0.25-every2-n4-rollout-s1")


def test_webshop_rows_are_paired_deterministic_and_carry_the_hidden_selections(in_tmp):
    toy = web(split="validation", max_tasks=3, seeds=(0, 1), rollouts=4, beta=0.1)
    rows = asyncio.run(run_cell(toy))
    assert rows == asyncio.run(run_cell(toy))
    none = asyncio.run(run_cell(toy.model_copy(update={"value": "none"})))
    assert [r["bon"] for r in rows] == [r["bon"] for r in none]  # Best-of-N ignores the value
    for r in rows:
        for k in ("bon", "amc"):
            m = r[k]["metrics"]
            assert 0 <= m["mode_reward"] <= m["oracle_best"] <= 1
            assert 0 <= m["max_weight_masked_reward"] <= m["oracle_best"]
            assert math.isnan(m["deployable_reward"])  # no selection value in rollout cells
    with pytest.raises(ValueError, match="not a webshop value"):  # TextCraft's models/value
        asyncio.run(run_cell(toy.model_copy(update={"value": "learned"})))
