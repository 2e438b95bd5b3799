"""A hand-made TextCraft value: the share of the shortest plan that the inventory has done.

    f(s) = 1 - L(s) / L(s_0),

where L is the length of the optimal planner's plan to the goal from an inventory
(:func:`amc.envs.textcraft.planner.plan_length`: the crafts still needed plus the base items
still short) and s_0 the empty inventory, so f rises from 0 to 1 as the inventory nears the
goal, drops when an action consumes planned ingredients for something else, and stays flat for
a wasted step (an invalid action, a distractor fetched). With the SMC increment
``(f(s_t) - f(s_{t-1})) / beta`` a particle that made progress gains weight and one that wasted
a step keeps its weight while the others gain: resampling after every step keeps the
particles that move.

What it reads: the goal of the first observation, the inventory that the history's own
(action, observation) steps built (:func:`amc.envs.textcraft.actions.inventory_after`, as the
observed-state summary reads it), and the public recipe book of the run's recipe source (the
Minecraft data the menu prompt and the planner also read) -- never the environment's hidden
state, so the same history always gets the same value, and a deployment computes it from what
it saw.

With ``invalid_penalty`` = lambda > 0 (option; default 0, the value above), every action the
environment refused so far (an observation starting "Could not" or "Wrong item format": an
unknown item, a recipe that does not exist, ingredients missing, an unparsable command)
costs lambda plan steps: f(s) = 1 - (L(s) + lambda * refused(s)) / L(s_0), clipped to
[0, 1]. A prior that has begun issuing refused actions keeps doing so (its own history
conditions it), so among siblings with the same inventory the one with fewer refusals ranks
higher.

It is neither learned nor an upper bound: it knows the recipes, not the prior. Its role is an
instrument (issue 61): a value under which resampling gains shows that the regime leaves
room for a value at all, at 1x the prior calls (it makes none). Registered as value
``textcraft-progress``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from amc.envs.replay import build_suite
from amc.envs.textcraft.actions import inventory_after
from amc.envs.textcraft.planner import plan_length
from amc.envs.textcraft.recipes import RecipeBook
from amc.envs.textcraft.summary import goal_item
from amc.registry import VALUES
from amc.types import History

REFUSED = ("Could not ", "Wrong item format: ")
"""How every refused TextCraft action's observation begins (the messages of
:class:`amc.envs.textcraft.actions.ActionFailed`)."""


class ProgressOptions(BaseModel):
    """Options of the ``textcraft-progress`` value."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    invalid_penalty: float = Field(0.0, ge=0.0)
    """Plan steps charged per refused action in the history (0: the plain plan progress)."""


def progress(book: RecipeBook, history: History, invalid_penalty: float = 0.0) -> float:
    """f = 1 - (L(inventory) + invalid_penalty * refused actions) / L(empty) in [0, 1]; 0 when
    the first observation names no goal the book knows (nothing to measure progress
    against)."""
    goal = goal_item(history.observation0)
    if goal is None or goal not in book.items:
        return 0.0
    try:
        full = plan_length(book, goal)
        left = plan_length(book, goal, inventory_after((s.action, s.observation)
                                                       for s in history.steps))
    except ValueError:  # a goal the book cannot craft: no plan to measure against
        return 0.0
    if full <= 0:
        return 1.0
    refused = sum(s.observation.startswith(REFUSED) for s in history.steps)
    return min(max(1.0 - (left + invalid_penalty * refused) / full, 0.0), 1.0)


class ProgressValue:
    """The plan-progress value over one recipe book (pure: no I/O after construction)."""

    def __init__(self, book: RecipeBook, invalid_penalty: float = 0.0) -> None:
        self.book = book
        self.invalid_penalty = invalid_penalty

    async def score(self, histories: Sequence[History]) -> list[float]:
        return [progress(self.book, h, self.invalid_penalty) for h in histories]

    async def aclose(self) -> None:
        pass


@VALUES.register("textcraft-progress", ProgressOptions)
def make_progress_value(options: ProgressOptions | None = None, *, env_name: str = "",
                        env_options: Any = None, **_: object) -> ProgressValue:
    """Hand-made TextCraft value: the share of the shortest plan the inventory has done."""
    if env_name != "textcraft":
        raise ValueError(f"the textcraft-progress value reads TextCraft histories; the run's "
                         f"environment is {env_name!r}")
    suite = build_suite(env_name, env_options)
    book = suite.book  # type: ignore[attr-defined]
    close = getattr(suite, "close", None)
    if close is not None:
        close()
    return ProgressValue(book, (options or ProgressOptions()).invalid_penalty)
