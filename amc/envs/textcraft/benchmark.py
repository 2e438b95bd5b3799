"""TextCraft's :class:`~amc.envs.benchmark.Benchmark` record (prompts, parser, planner, goal).

Its AgentGym dialect is the plain one (what ``amc serve-env`` speaks for any environment); the
forced last action is the server's ``GET /final_action`` when it has one, and a server without
``/valid_actions`` (the reference TextCraft server) has its menu derived from the listed
crafting commands and the steps seen (:func:`amc.envs.textcraft.actions.observed_menu`).
"""

from __future__ import annotations

import re
from functools import partial
from typing import Any

from amc.envs.agentgym.protocol import AgentGymProtocol, server_final_action
from amc.envs.benchmark import Benchmark, PlannerHooks, packaged_split
from amc.envs.generic import collapse
from amc.envs.generic import extract_instruction as extract_generic
from amc.envs.textcraft.prompts import PROMPTS
from amc.envs.textcraft.summary import textcraft_summary


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


def derived_menu(env: Any) -> list[str] | None:
    """An AgentGym env's menu from its listed commands and recorded steps; the recipe source
    is the client's ``textcraft_recipes`` option (read only when a menu needs it)."""
    from amc.envs.textcraft.actions import observed_menu
    from amc.envs.textcraft.env import load_book

    steps = [(r.action, r.observation) for r in env.records]
    return observed_menu(env.observation0, steps, env.done,
                         lambda: load_book(env.suite.options.textcraft_recipes))


AGENTGYM = AgentGymProtocol(derive_menu=derived_menu, final_action=server_final_action)

BENCHMARK = Benchmark("textcraft", PROMPTS, normalise, extract_instruction, clean_state,
                      planner=planner, paper_split=partial(packaged_split, "amc.envs.textcraft"),
                      agentgym=AGENTGYM, observed_summary=textcraft_summary,
                      task_identity=("recipe_source", "minecraft_version", "split",
                                     "splits_dir"))
