"""SciWorld's observed-state summary: the score so far and where the agent last found itself.

Read only from the history: the score is the sum of the rewards the agent has been given
(x 100, the simulator's scale), the location is the last ``This room is called the X`` or
``You move to the X`` the agent has read. Never the simulator's hidden state.
"""

from __future__ import annotations

import re

from amc.types import History

_ROOM = re.compile(r"(?:This room is called the|You move to the) ([^.\n]+)\.", re.IGNORECASE)


def last_location(texts: list[str]) -> str | None:
    """The room the last observation naming one puts the agent in (None: none named)."""
    for text in reversed(texts):
        rooms = _ROOM.findall(text)
        if rooms:
            return str(rooms[-1]).strip()
    return None


def sciworld_summary(history: History) -> str:
    """``score so far: N | location: X`` from the history's rewards and observations."""
    score = round(100 * sum(s.reward for s in history.steps))
    where = last_location([history.observation0, *(s.observation for s in history.steps)])
    return f"score so far: {score} | location: {where or 'unknown'}"
