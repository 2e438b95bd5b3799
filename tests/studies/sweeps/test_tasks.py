"""The sweep's tasks: budgets (plan, menu-form plan or fixed per depth) and the splits."""

from __future__ import annotations

from amc.envs.textcraft.planner import menu_plan
from amc.envs.textcraft.tasks import plan
from studies.sweeps.config import CellParams
from studies.sweeps.tasks import make_suite, task_budget


def test_budgets_are_the_plan_the_menu_plan_or_one_per_depth():
    suite = make_suite(CellParams())
    tasks = suite.task_ids("test")
    own = {t: len(plan(suite.book, suite.tasks.goal(t))) for t in tasks}
    menu = {t: len(menu_plan(suite, t)) for t in tasks}
    assert all(task_budget(suite, t, 1) == own[t] + 1 for t in tasks)
    assert all(task_budget(suite, t, 1, menu_form=True) == menu[t] + 1 for t in tasks)
    assert any(menu[t] > own[t] for t in tasks)  # the menu form costs steps on some tasks
    assert {task_budget(suite, t, 1, True, fixed=10) for t in tasks} == {10}


def test_cells_with_the_side_channels_closed_have_their_own_names():
    from studies.sweeps.cell import cell_name

    legacy = cell_name(CellParams(menu_form=False))
    assert legacy == "test-d2-q0.4-b0.25-every2-n4-rollout-s1-seeds6"  # as recorded before
    assert cell_name(CellParams()) == legacy + "-menu"
    assert cell_name(CellParams(budget=10)) == legacy + "-menu-B10"


def test_validation_is_a_seeded_random_sample_disjoint_from_value_training_and_test():
    from studies.sweeps.tasks import split_tasks, value_train_tasks

    cell = CellParams(split="validation")
    suite = make_suite(cell)
    train = suite.task_ids("train")
    val, rest = split_tasks(suite, cell), value_train_tasks(suite, cell)
    assert len(val) == cell.val_tasks == 116 and sorted(val + rest, key=train.index) == train
    assert not set(val) & set(rest) and not set(val) & set(suite.task_ids("test"))
    assert val == split_tasks(suite, cell)  # seeded
    assert val != train[-116:]  # not the id tail
    other = split_tasks(suite, cell.model_copy(update={"val_seed": 1}))
    assert other != val and len(set(other) & set(val)) < 100
    # spread over the id order (the tail held the last goals of the sorted list only)
    pos = sorted(train.index(t) for t in val)
    assert pos[0] < 20 and pos[-1] > len(train) - 20


def test_recorded_cells_keep_their_meaning():
    import json
    from pathlib import Path

    from studies.sweeps.cell import cell_name
    from studies.sweeps.config import recorded_cell
    from studies.sweeps.tasks import split_tasks

    root = Path(__file__).resolve().parents[3] / "evidence" / "runs"
    path = root / "validation-d2-q0.4-b0.25-every2-n4-learned-s1-seeds6.json"
    rec = json.loads(path.read_text())
    cell = recorded_cell(rec["cell"])
    assert (cell.val_sample, cell.menu_form) == ("tail", False)
    assert cell_name(cell) == rec["name"] == path.stem
    suite = make_suite(cell)
    assert split_tasks(suite, cell) == suite.task_ids("train")[-54:]
    assert sorted({r["task_id"] for r in rec["rows"]}) == sorted(split_tasks(suite, cell))
