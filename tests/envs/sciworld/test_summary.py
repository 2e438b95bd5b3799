"""SciWorld's observed-state summary: the score from the rewards the agent was given and the
last room an observation named (text only; no simulator needed)."""

from __future__ import annotations

from amc.envs.sciworld.summary import sciworld_summary
from amc.types import History, Step


def test_score_and_location_from_the_history() -> None:
    h = History("t", "This room is called the hallway. In it, you see: a door.")
    assert sciworld_summary(h) == "score so far: 0 | location: hallway"
    h = h.extend(Step("", "go to kitchen", "You move to the kitchen.", 0.08, False))
    h = h.extend(Step("", "look around", "This room is called the kitchen. A fridge.", 0.0,
                      False))
    h = h.extend(Step("", "open fridge", "The fridge is now open.", 0.17, False))
    assert sciworld_summary(h) == "score so far: 25 | location: kitchen"
    assert sciworld_summary(History("t", "Nothing here.")).endswith("location: unknown")
