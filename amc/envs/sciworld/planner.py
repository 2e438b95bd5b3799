"""A SciWorld planner for the planner-mix prior: follow ScienceWorld's gold action sequence.

ScienceWorld ships, for every game, a gold action sequence that reaches score 100 from the
initial state. The planner's next action is the first gold action the episode has not taken
yet, in order: progress ``k`` is the length of the longest prefix of the gold sequence that is a
subsequence of the actions that reached the simulator (:func:`gold_progress`), so a random
detour between two gold actions does not lose the place, and a random action that happens to
be the next gold action counts as taking it.

Unlike the TextCraft and WebShop planners it is **open loop**: a detour that changes the world
(walking to another room, moving or using an object the gold path needs) can make the later gold
actions fail, and the planner does not repair the path; it keeps proposing the next gold action.
So q = 1 solves every game in its gold path's number of steps, while for q < 1 the success rate
falls faster with 1 - q than with a closed-loop planner. It is a simulation instrument: its
numbers say how a method behaves for a prior of a given skill, never how an LLM does.

It reads only the history (the planner-mix prior passes a ``HistoryView``): a JVM simulator
cannot be replayed in the event loop, and the gold path needs no state. The prior's random
branch draws from the menu the driver attaches from the particle's own environment, so
``SciWorldOptions.enumerate_actions`` must be on (100-600 ms per state; off, the menu is empty
and the prior answers an invalid action).
"""

from __future__ import annotations

from collections.abc import Sequence

from amc.envs.sciworld.env import SciWorldSuite
from amc.types import INVALID_ACTION


def gold_progress(gold: Sequence[str], taken: Sequence[str]) -> int:
    """How many gold actions, in order, occur as a subsequence of ``taken`` (greedy, exact)."""
    k = 0
    for action in taken:
        if k < len(gold) and action.strip() == gold[k]:
            k += 1
    return k


def sciworld_next_action(view: object) -> str | None:
    """The next gold action not taken yet (None: episode over, or the gold path is used up).

    ``view``: a :class:`~amc.envs.benchmark.HistoryView` (suite and history). It needs no
    simulator state -- the JVM is not replayed -- only the game's memoised gold path.
    """
    suite, history = getattr(view, "suite", None), getattr(view, "history", None)
    if not isinstance(suite, SciWorldSuite) or history is None:
        raise TypeError(f"the SciWorld planner needs a HistoryView of a SciWorldSuite, "
                        f"got {type(view)}")
    if history.done:
        return None
    gold = suite.gold_actions(history.task_id)
    k = gold_progress(gold, [a for a in history.actions if a != INVALID_ACTION])
    return gold[k] if k < len(gold) else None
