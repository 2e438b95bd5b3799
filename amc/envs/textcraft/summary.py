"""TextCraft's observed-state summary: the inventory the agent has seen itself build and what
the goal's listed recipe still needs.

Computed only from the history's text -- the crafting commands and goal of the first
observation, and each step's (action, observation) pair (a ``Got`` adds, a ``Crafted``
consumes the ingredients and adds the output, exactly as
:func:`~amc.envs.textcraft.actions.inventory_after` reads them) -- never from the
environment's hidden state, so the same observations give the same summary whatever the
server holds. The value model reads it in its NOW section: whether the inventory already holds
the goal's ingredients is what decides most TextCraft outcomes, and it is lost when the
oldest history (the recipes) is dropped to fit the model's input.
"""

from __future__ import annotations

import re

from amc.envs.textcraft.actions import command_recipe, inventory_after, item_id, listed_commands
from amc.envs.textcraft.recipes import Recipe, pretty
from amc.types import History

_GOAL = re.compile(r"craft (?:[0-9]+ )?(.+?)\.?$")


def goal_item(observation0: str) -> str | None:
    """The item id the first observation's ``Goal: craft X.`` names (None: no such line)."""
    _, sep, rest = observation0.partition("Goal:")
    m = _GOAL.match(rest.strip().splitlines()[0].strip()) if sep and rest.strip() else None
    return item_id(m.group(1), "exact") if m else None


def _items(inv: dict[str, int]) -> str:
    return ", ".join(f"{k} {pretty(i)}" for i, k in sorted(inv.items())) or "empty"


def _needs(recipe: Recipe, inv: dict[str, int], listed: dict[str, Recipe]) -> str:
    missing = []
    for name, k in recipe.inputs:
        have = inv.get(name, 0)
        if have < k:
            how = "craftable" if name in listed else "get"
            missing.append(f"{k - have} more {pretty(name)} ({how})")
    if not missing:
        return "all ingredients held: craft it now"
    return "still needs " + ", ".join(missing)


def textcraft_summary(history: History) -> str | None:
    """``inventory: ... | goal X: ...`` from the history's observations (None: no goal)."""
    goal = goal_item(history.observation0)
    if goal is None:
        return None
    inv = inventory_after((s.action, s.observation) for s in history.steps)
    listed = {r.output: r for c in listed_commands(history.observation0)
              if (r := command_recipe(c)) is not None}
    if inv.get(goal, 0) > 0:
        status = "in the inventory"
    elif goal in listed:
        status = _needs(listed[goal], inv, listed)
    else:
        status = "no listed recipe"
    return f"inventory: {_items(inv)} | goal {pretty(goal)}: {status}"
