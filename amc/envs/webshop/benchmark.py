"""WebShop's :class:`~amc.envs.benchmark.Benchmark` record (``search[..]``/``click[..]``)."""

from __future__ import annotations

import re
from functools import partial

from amc.envs.benchmark import Benchmark, PlannerHooks
from amc.envs.generic import collapse, first_line
from amc.envs.paper_splits import paper_split
from amc.envs.webshop.prompts import PROMPTS

_WEB = re.compile(r"^(search|click)\s*\[\s*(.*?)\s*\]?$", re.IGNORECASE)


def normalise(a: str) -> str:
    """``verb[arg]`` with the verb lower-cased; clickables are matched lower-cased by the
    WebShop server, so a click's argument is too, while a search keeps the user's words."""
    a = collapse(a)
    m = _WEB.match(a)
    if not m:
        return a
    verb, arg = m.group(1).lower(), m.group(2)
    return f"{verb}[{arg.lower() if verb == 'click' else arg}]"


def extract_instruction(obs: str) -> str:
    """The text after ``Instruction:`` up to the next ``[SEP]`` (else the first line)."""
    m = re.search(r"Instruction:\s*(?:\[SEP\]\s*)?", obs)
    if m:
        return obs[m.end():].split("[SEP]", 1)[0].strip()
    return first_line(obs)


def clean_state(obs: str, instruction: str) -> str:
    """The page without the instruction it repeats (and the empty ``[SEP]`` runs left)."""
    if not instruction:
        return obs
    cut = re.sub(r"Instruction:\s*(\[SEP\]\s*)?", "", obs).replace(instruction, "").strip()
    return re.sub(r"(\[SEP\]\s*){2,}", "[SEP] ", cut).strip(" [SEP]").strip() or cut


def planner() -> PlannerHooks:
    """Search, open the goal's product, choose its options, buy (replayed environment)."""
    from amc.envs.webshop.planner import webshop_next_action

    return PlannerHooks(webshop_next_action)


BENCHMARK = Benchmark("webshop", PROMPTS, normalise, extract_instruction, clean_state,
                      planner=planner, paper_split=partial(paper_split, "webshop"))
