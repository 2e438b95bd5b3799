"""SciWorld's :class:`~amc.envs.benchmark.Benchmark` record (rewards in -1..1, gold planner).

Its AgentGym dialect is the plain one, except that the first observation is
``task_description + "\\n" + observation`` and ``/step`` answers a cumulative ``score`` in
0..100 whose increment / 100 is the reward (``info["score"]``: the score / 100).
"""

from __future__ import annotations

import re
from functools import partial
from typing import Any

from amc.envs.agentgym.protocol import AgentGymProtocol
from amc.envs.benchmark import Benchmark, PlannerHooks, packaged_split
from amc.envs.generic import collapse, first_line
from amc.envs.sciworld.prompts import PROMPTS
from amc.envs.sciworld.summary import sciworld_summary
from amc.types import EnvStep


def normalise(a: str) -> str:
    """Lower case, whitespace collapsed, a trailing period dropped."""
    return collapse(a.lower()).rstrip(".")


def extract_instruction(obs: str) -> str:
    """The first non-empty line of the task description (after ``Task Description:``)."""
    m = re.search(r"Task Description:\s*", obs, re.IGNORECASE)
    return first_line(obs[m.end():] if m else obs)


def planner() -> PlannerHooks:
    """The gold-sequence planner; it reads the history (a JVM is not replayed)."""
    from amc.envs.sciworld.planner import sciworld_next_action

    return PlannerHooks(sciworld_next_action, replay=False)


def read_reset(data: Any) -> str:
    """The task description, then the first observation."""
    return f"{data['task_description']}\n{data['observation']}"


def read_step(data: Any, score: float) -> tuple[EnvStep, float]:
    """The reward is the increment of the server's cumulative score (0..100, scaled to 0..1)."""
    new = float(data.get("score", 0) or 0) / 100.0
    return EnvStep(str(data["observation"]), new - score, bool(data["done"]), {"score": new}), new


AGENTGYM = AgentGymProtocol(read_reset=read_reset, read_step=read_step)

BENCHMARK = Benchmark("sciworld", PROMPTS, normalise, extract_instruction,
                      reward_range=(-1.0, 1.0), planner=planner,
                      paper_split=partial(packaged_split, "amc.envs.sciworld"), agentgym=AGENTGYM,
                      observed_summary=sciworld_summary)
