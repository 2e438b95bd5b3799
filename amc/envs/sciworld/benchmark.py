"""SciWorld's :class:`~amc.envs.benchmark.Benchmark` record (rewards in -1..1, gold planner)."""

from __future__ import annotations

import re
from functools import partial

from amc.envs.benchmark import Benchmark, PlannerHooks
from amc.envs.generic import collapse, first_line
from amc.envs.paper_splits import paper_split
from amc.envs.sciworld.prompts import PROMPTS


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


BENCHMARK = Benchmark("sciworld", PROMPTS, normalise, extract_instruction,
                      reward_range=(-1.0, 1.0), planner=planner,
                      paper_split=partial(paper_split, "sciworld"))
