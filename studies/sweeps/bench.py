"""The benchmark of a sweep cell: its suite, its tasks' step budget, and its planner's name.

TextCraft (the original sweep, :mod:`studies.sweeps.tasks`): tasks of one crafting depth, budget =
optimal plan length + slack. WebShop: the catalog of ``CellParams.catalog`` (default: the
project's generated fixture catalog, written once under ``work/``), the paper's splits (test =
goal ids 5..54, train = the others), the graded score, one fixed budget for every task (the
environment's own step limit is set to it; WebShop's forced buy follows it). SciWorld: the
in-process ScienceWorld with the action menu on (the planner-mix prior's random branch draws
from it), the splits of ``CellParams.task_file`` (a subset whose gold paths fit the budget),
one fixed budget. The validation split is drawn from train as for TextCraft
(:func:`studies.sweeps.tasks.split_tasks`). The learned value's data
(:mod:`studies.sweeps.value`) uses
the same suite, the benchmark's planner-mix prior (:func:`bench_prior`) and budgets
(:func:`value_budget`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from amc.priors.planner_mix import PlannerMixOptions, PlannerMixPrior, load_planner
from studies.sweeps.config import CellParams, ValueParams
from studies.sweeps.tasks import make_suite, task_budget

FIXTURE_DIR = Path("work/webshop-fixture")
"""Where a WebShop cell without a catalog writes the generated fixture catalog."""
SPLITS_DIR = Path("work/sciworld-splits")
"""Where a SciWorld cell writes its task file's splits (``SciWorldOptions.splits_dir``)."""


def make_bench_suite(cell: CellParams) -> Any:
    """The cell's environment suite."""
    if cell.benchmark == "textcraft":
        return make_suite(cell)
    if cell.budget is None:
        raise ValueError(f"a {cell.benchmark} cell needs a fixed budget (cell.budget)")
    splits = _task_file(cell.task_file)
    if cell.benchmark == "webshop":
        from amc.envs.webshop.env import WebShopOptions, WebShopSuite
        from amc.envs.webshop.fixture import write_fixture_catalog

        data = cell.catalog or str(write_fixture_catalog(FIXTURE_DIR))
        return WebShopSuite(WebShopOptions(data_dir=data, max_steps=cell.budget,
                                           split_ids=splits))
    from amc.envs.sciworld.env import SciWorldOptions, SciWorldSuite

    if splits is None:
        raise ValueError("a sciworld cell needs cell.task_file (its task subset)")
    SPLITS_DIR.mkdir(parents=True, exist_ok=True)
    for k, ids in splits.items():
        (SPLITS_DIR / f"sciworld_{k}_idx.json").write_text(json.dumps(ids))
    return SciWorldSuite(SciWorldOptions(max_steps=cell.budget, enumerate_actions=True,
                                         pool_size=4, splits_dir=SPLITS_DIR))


def bench_budget(suite: Any, cell: CellParams, task: str) -> int:
    """A task's step budget: the cell's fixed one (the environment's step limit), else
    TextCraft's plan length + slack."""
    if cell.budget is not None:
        return cell.budget
    return task_budget(suite, task, cell.slack, cell.menu_form)


def bench_prior(suite: Any, cell: CellParams, q: float, menu_form: bool) -> PlannerMixPrior:
    """The planner-mix prior of the cell's benchmark at skill q (``menu_form`` rewrites
    TextCraft's planner actions only: the other planners emit menu actions)."""
    return PlannerMixPrior(suite, load_planner(cell.benchmark), PlannerMixOptions(
        q=q, menu_form=menu_form and cell.benchmark == "textcraft"))


def value_budget(suite: Any, cell: CellParams, vp: ValueParams, task: str) -> int:
    """A value-data rollout's budget: TextCraft's plan + slack (or ``vp.fixed_budget``); the
    other benchmarks' cells' one fixed budget (``cell.budget``), the environment's limit."""
    if cell.benchmark == "textcraft":
        return task_budget(suite, task, vp.slack, vp.menu_form, vp.fixed_budget)
    if cell.budget is None:
        raise ValueError(f"a {cell.benchmark} value needs the cells' fixed budget (cell.budget)")
    return cell.budget


def _task_file(path: str | None) -> dict[str, list[int]] | None:
    if path is None:
        return None
    data = json.loads(Path(path).read_text())
    if not isinstance(data, dict) or not {"train", "test"} <= set(data):
        raise ValueError(f"{path}: a task file is {{\"train\": [...], \"test\": [...]}}")
    return {k: [int(i) for i in data[k]] for k in ("train", "test")}

