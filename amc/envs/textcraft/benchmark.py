"""TextCraft's :class:`~amc.envs.benchmark.Benchmark` record (prompts, parser, planner, goal)."""

from __future__ import annotations

import re
from functools import partial

from amc.envs.benchmark import Benchmark, PlannerHooks
from amc.envs.generic import collapse
from amc.envs.generic import extract_instruction as extract_generic
from amc.envs.paper_splits import paper_split
from amc.envs.textcraft.prompts import PROMPTS


def normalise(a: str) -> str:
    """TextCraft commands use letters, digits, commas and spaces only ("craft 4 oak planks
    using 1 oak log"): everything else goes (trailing periods, quotes, "minecraft:" prefixes)."""
    a = a.lower().replace("minecraft:", "").replace("_", " ")
    a = re.sub(r"[^a-z0-9, ]", "", a)
    a = re.sub(r"\s*,\s*", ", ", a)
    return collapse(a).strip(", ")


def extract_instruction(obs: str) -> str:
    """The text after ``Goal:`` (the generic extractor when there is none)."""
    return obs.split("Goal:", 1)[1].strip() if "Goal:" in obs else extract_generic(obs)


def clean_state(obs: str, instruction: str) -> str:
    """The observation without its trailing ``Goal:`` line."""
    return obs.split("Goal:", 1)[0].rstrip() if "Goal:" in obs else obs


def planner() -> PlannerHooks:
    """The exact planner and its memoised menu (imports the environment only when asked)."""
    from amc.envs.textcraft.planner import (
        textcraft_menu,
        textcraft_menu_form,
        textcraft_next_action,
    )

    return PlannerHooks(textcraft_next_action, textcraft_menu, to_menu=textcraft_menu_form)


BENCHMARK = Benchmark("textcraft", PROMPTS, normalise, extract_instruction, clean_state,
                      planner=planner, paper_split=partial(paper_split, "textcraft"),
                      task_identity=("recipe_source", "minecraft_version", "split",
                                     "splits_dir"))
