"""The sweep's tasks: TextCraft at one depth, its validation sample, and per-task step budgets.

TextCraft's generated split has ``train`` and ``test`` only; ``val_tasks`` tasks of ``train``
are the sweep's validation split (settings are chosen there) and the learned value trains on
the others, so no cell is evaluated on a task the value saw. The validation tasks are a seeded
random sample of ``train`` (``val_sample: random``, the declared protocol of issue 30,
``sweeps/protocol-issue30.yaml``) or, as in every cell recorded before it (records without the
key), the last ``val_tasks`` of the list (``tail``: the id order, so not a random sample).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from amc.envs.textcraft.env import TextCraftOptions, TextCraftSuite
from amc.envs.textcraft.planner import menu_plan
from amc.envs.textcraft.tasks import plan
from studies.sweeps.config import CellParams


def make_suite(cell: CellParams) -> TextCraftSuite:
    """TextCraft with the binary reward, tasks of exactly the cell's depth."""
    return TextCraftSuite(TextCraftOptions(reward="binary", min_depth=cell.depth,
                                           max_depth=cell.depth))


def split_tasks(suite: TextCraftSuite, cell: CellParams) -> list[str]:
    """The cell's tasks: test, or the validation tail of train (:mod:`studies.sweeps.config`)."""
    tasks = suite.task_ids("test") if cell.split == "test" else validation_tasks(suite, cell)
    return tasks[: cell.max_tasks] if cell.max_tasks else tasks


def validation_tasks(suite: TextCraftSuite, cell: CellParams) -> list[str]:
    """The validation split: ``val_tasks`` train tasks, a seeded random sample or the tail.

    The random sample keeps the train list's order (a permutation's first ``val_tasks``
    positions, sorted), so ``max_tasks`` takes a random subset of it too."""
    train = suite.task_ids("train")
    if cell.val_tasks >= len(train):
        raise ValueError(f"val_tasks={cell.val_tasks} leaves no train tasks ({len(train)})")
    if cell.val_sample == "tail":
        return train[-cell.val_tasks:]
    rng = np.random.default_rng([cell.val_seed, cell.depth])
    picked = sorted(rng.permutation(len(train))[: cell.val_tasks])
    return [train[i] for i in picked]


def value_train_tasks(suite: TextCraftSuite, cell: CellParams) -> list[str]:
    """Train tasks that are not validation tasks (the learned value's data), in list order."""
    val = set(validation_tasks(suite, cell))
    return [t for t in suite.task_ids("train") if t not in val]


def task_budget(suite: TextCraftSuite, task: str, slack: int, menu_form: bool = False,
                fixed: int | None = None) -> int:
    """Step budget of a task: ``fixed`` when given, else its optimal plan's length + slack
    (the menu-form plan's with ``menu_form``: the steps a planner on the menu needs)."""
    if fixed is not None:
        return fixed
    if menu_form:
        return _menu_plan_length(suite, task) + slack
    return len(plan(suite.book, suite.tasks.goal(task))) + slack


@lru_cache(maxsize=4096)
def _menu_plan_length(suite: TextCraftSuite, task: str) -> int:
    return len(menu_plan(suite, task))
