"""An optimal TextCraft planner that works from any inventory (the oracle of the planner-mix prior).

The oracle :func:`~amc.envs.textcraft.tasks.plan` crafts the goal from an *empty* inventory:
min-depth recipes, one concrete member per tag, each base item fetched once with its total
count, each intermediate crafted ``ceil(demand / yield)`` times. :func:`next_action` extends it
to any inventory (a random action may have fetched, crafted or consumed items): with the same
recipe choices it totals the demand of every item over the recipe DAG, net of what is held
(consumers before their ingredients, so a held intermediate also saves its ingredients), then

1. fetches the first base item (sorted by id) still missing, with the exact missing count, else
2. crafts the first item (ingredients before their consumers) that still needs crafting.

From an empty inventory this reproduces :func:`plan` action for action, so a policy that always
follows it solves a task in exactly ``len(plan(book, goal))`` steps; from any other inventory it
takes the fewest actions the fixed recipe choices allow (items of another tag member than the
planned one are not counted: the plan stays simple and always executable).

Menu form. The planner fetches a base item's whole missing count at once (``get 72 ice``) while
the menu offers ``get k item`` only at the counts a listed recipe uses (``get 9 ice``), so its
actions can be told apart from a menu-prompted agent's. :func:`menu_form` rewrites an action
into the menu's own form -- a ``get`` at the smallest listed count that covers the shortfall,
else at the largest listed count (so the fewest menu ``get`` s reach it), a craft as the menu
writes that recipe (its tag members) -- and :func:`menu_plan` is the resulting plan from an
empty inventory (what a planner restricted to the menu needs: the budget of such a prior).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from math import ceil
from typing import Any

from amc.envs.textcraft.actions import ActionFailed, Craft, Get, menu, parse
from amc.envs.textcraft.env import TextCraftEnv, TextCraftSuite, listed_recipes
from amc.envs.textcraft.recipes import Recipe, RecipeBook, pretty
from amc.envs.textcraft.tasks import choose_recipes, concrete


@dataclass(frozen=True)
class GoalPlan:
    """The fixed recipe choices for one goal, shared by every state of its episodes."""

    goal: str
    order: tuple[str, ...]
    """Crafted items in post-order: ingredients before the items that use them."""
    recipes: Mapping[str, Recipe]
    """Crafted item -> its chosen (min-depth) recipe."""
    inputs: Mapping[str, tuple[tuple[str, int], ...]]
    """Crafted item -> its concrete ingredients (tag -> planned member) and counts per craft."""
    base: tuple[str, ...]
    """Base items the plan fetches, sorted by id."""


@lru_cache(maxsize=4096)
def goal_plan(book: RecipeBook, goal: str) -> GoalPlan:
    """Recipe choices of :func:`~amc.envs.textcraft.tasks.plan` for ``goal`` (cached)."""
    recipes, order, base = choose_recipes(book, goal)
    inputs = {i: tuple((concrete(book, n), k) for n, k in r.inputs) for i, r in recipes.items()}
    return GoalPlan(goal, tuple(order), recipes, inputs, tuple(sorted(base)))


def missing(gp: GoalPlan, inventory: Mapping[str, int]) -> tuple[dict[str, int], dict[str, int]]:
    """(crafts still needed per item, base items still missing) to obtain the goal once."""
    demand: dict[str, int] = defaultdict(int)
    demand[gp.goal] = 1
    crafts: dict[str, int] = {}
    for item in reversed(gp.order):  # consumers before their ingredients
        net = max(demand[item] - inventory.get(item, 0), 0)
        crafts[item] = ceil(net / gp.recipes[item].count)
        for ing, k in gp.inputs[item]:
            demand[ing] += crafts[item] * k
    short = {b: demand[b] - inventory.get(b, 0) for b in gp.base
             if demand[b] > inventory.get(b, 0)}
    return crafts, short


def next_action(book: RecipeBook, goal: str, inventory: Mapping[str, int]) -> str | None:
    """The next action of a shortest plan to ``goal`` from ``inventory`` (None: goal held)."""
    if inventory.get(goal, 0) >= 1:
        return None
    if book.is_base(goal):
        return f"get 1 {pretty(goal)}"
    gp = goal_plan(book, goal)
    crafts, short = missing(gp, inventory)
    for b in gp.base:  # sorted, as plan() fetches them
        if b in short:
            return f"get {short[b]} {pretty(b)}"
    for item in gp.order:
        if crafts[item] > 0:
            r = gp.recipes[item]
            ins = ", ".join(f"{k} {pretty(n)}" for n, k in gp.inputs[item])
            return f"craft {r.count} {pretty(item)} using {ins}"
    raise AssertionError("unreachable: nothing missing but the goal is not held")


def plan_length(book: RecipeBook, goal: str, inventory: Mapping[str, int] | None = None) -> int:
    """Number of actions :func:`next_action` needs from ``inventory`` (empty: len(plan))."""
    if inventory is not None and inventory.get(goal, 0) >= 1:
        return 0
    if book.is_base(goal):
        return 1
    crafts, short = missing(goal_plan(book, goal), inventory or {})
    return len(short) + sum(crafts.values())


def textcraft_next_action(env: object) -> str | None:
    """Planner hook of the planner-mix prior: the next optimal action in a TextCraft episode."""
    e = _checked(env)
    return _next_action_memo(e.book, e.goal, tuple(sorted(e.inventory.items())))


def textcraft_menu(env: object) -> list[str] | None:
    """``env.valid_actions()`` (:func:`amc.envs.textcraft.actions.menu`), memoised by
    (recipes, commands, inventory): rollouts revisit the same inventories."""
    e = _checked(env)
    if e.done:
        return []
    key = (e.book, e.commands, tuple(sorted(e.inventory.items())))
    found = _MENUS.get(key)
    if found is None:
        found = _MENUS[key] = tuple(menu(listed_recipes(e.commands), e.inventory, e.book))
        if len(_MENUS) > _MENU_CACHE:
            del _MENUS[next(iter(_MENUS))]  # drop the oldest entry (insertion order)
    return list(found)


def menu_form(action: str, options: Sequence[str]) -> str:
    """``action`` as the menu ``options`` write it (itself when listed or when no entry fits).

    ``get n x`` -> ``get k x`` with the smallest listed k >= n, else the largest listed k;
    ``craft c x using ...`` -> the listed craft of x with the same count and ingredient counts
    (the menu fills a tag with the held member it prefers)."""
    if action in options:
        return action
    try:
        act = parse(action, "exact")
    except ActionFailed:
        return action
    if isinstance(act, Get):
        ks = sorted(o.n for o in _parsed(options, Get) if o.item == act.item)
        if ks:
            k = next((k for k in ks if k >= act.n), ks[-1])
            return f"get {k} {act.item}"
    elif isinstance(act, Craft):
        counts = [k for _, k in act.inputs]
        for text, o in _parsed_text(options, Craft):
            if (o.output, o.count, [k for _, k in o.inputs]) == (act.output, act.count, counts):
                return text
    return action


def _parsed_text(options: Sequence[str], kind: type) -> list[tuple[str, Any]]:
    out = []
    for text in options:
        try:
            act = parse(text, "exact")
        except ActionFailed:
            continue
        if isinstance(act, kind):
            out.append((text, act))
    return out


def _parsed(options: Sequence[str], kind: type) -> list[Any]:
    return [a for _, a in _parsed_text(options, kind)]


def textcraft_menu_form(env: object, action: str) -> str:
    """Menu-form hook of the planner-mix prior: :func:`menu_form` against the state's menu."""
    return menu_form(action, textcraft_menu(env) or ())


def menu_plan(suite: TextCraftSuite, task_id: str, limit: int = 200) -> list[str]:
    """The menu-form planner's actions from an empty inventory until the goal is held."""
    env = suite.make()
    env.reset(task_id)
    actions: list[str] = []
    while not env.done:
        a = textcraft_next_action(env)
        if a is None or len(actions) >= limit:
            raise RuntimeError(f"menu-form planner does not finish task {task_id}")
        actions.append(textcraft_menu_form(env, a))
        if "error" in env.step(actions[-1]).info:
            raise RuntimeError(f"menu-form action {actions[-1]!r} fails in task {task_id}")
    return actions


_MENU_CACHE = 65536
_MENUS: dict[tuple, tuple[str, ...]] = {}


@lru_cache(maxsize=65536)
def _next_action_memo(book: RecipeBook, goal: str, inventory: tuple[tuple[str, int], ...]
                      ) -> str | None:
    return next_action(book, goal, dict(inventory))


def _checked(env: object) -> TextCraftEnv:
    if not isinstance(env, TextCraftEnv) or env.goal is None:
        raise TypeError(f"the TextCraft planner needs a reset TextCraftEnv, got {type(env)}")
    return env
