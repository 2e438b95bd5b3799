"""The menu form of the TextCraft planner: its actions written as the menu writes them.

What must hold: a ``get`` becomes the menu's ``get`` of the same item at the smallest listed
count covering the shortfall (else the largest), a craft the menu's craft of the same recipe;
an action already listed is untouched; the menu-form plan solves every task with every action
on the state's menu, and is never shorter than the planner's own plan.
"""

from __future__ import annotations

import pytest

from amc.envs.textcraft.env import TextCraftOptions, TextCraftSuite
from amc.envs.textcraft.planner import menu_form, menu_plan, textcraft_menu
from amc.envs.textcraft.tasks import plan

MENU = ["get 1 ice", "get 4 ice", "get 9 ice", "get 2 oak log",
        "craft 1 crafting table using 4 birch planks", "inventory"]


@pytest.mark.parametrize(("action", "form"), [
    ("get 72 ice", "get 9 ice"),  # more than any listed count: the largest
    ("get 3 ice", "get 4 ice"),   # the smallest listed count that covers it
    ("get 4 ice", "get 4 ice"),   # listed: untouched
    ("get 1 oak log", "get 2 oak log"),
    ("craft 1 crafting table using 4 oak planks", "craft 1 crafting table using 4 birch planks"),
    ("get 5 stone", "get 5 stone"),  # no listed get of the item: nothing to rewrite it into
    ("craft 2 crafting table using 4 oak planks", "craft 2 crafting table using 4 oak planks"),
    ("inventory", "inventory"),
])
def test_menu_form_rewrites_into_a_listed_action(action, form):
    assert menu_form(action, MENU) == form


@pytest.fixture(scope="module")
def suite() -> TextCraftSuite:
    return TextCraftSuite(TextCraftOptions())  # depths 1-4


def test_menu_plan_solves_every_task_on_the_menu(suite):
    longer = 0
    for t in suite.task_ids("all"):
        actions = menu_plan(suite, t)
        env = suite.make()
        env.reset(t)
        for a in actions:
            assert a in textcraft_menu(env), (t, a)
            env.step(a)
        assert env.done, t
        n = len(plan(suite.book, suite.tasks.goal(t)))
        assert len(actions) >= n
        longer += len(actions) > n
    assert longer > 50  # the planner's own plan is often off the menu (e.g. get 72 ice)
