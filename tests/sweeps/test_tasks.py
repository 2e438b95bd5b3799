"""The sweep's tasks: budgets (plan, menu-form plan or fixed per depth) and the splits."""

from __future__ import annotations

from amc.envs.textcraft.planner import menu_plan
from amc.envs.textcraft.tasks import plan
from amc.sweeps.config import CellParams
from amc.sweeps.tasks import make_suite, task_budget


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
    from amc.sweeps.cell import cell_name

    legacy = cell_name(CellParams(menu_form=False))
    assert legacy == "test-d2-q0.4-b0.25-every2-n4-rollout-s1-seeds6"  # as recorded before
    assert cell_name(CellParams()) == legacy + "-menu"
    assert cell_name(CellParams(fixed_budget=10)) == legacy + "-menu-B10"
