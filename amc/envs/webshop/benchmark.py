"""WebShop's :class:`~amc.envs.benchmark.Benchmark` record (``search[..]``/``click[..]``).

Its AgentGym dialect (agentenv-webshop): ``POST /create`` -> int; ``/reset {"env_idx",
"session_id"}`` -> ``[obs, null]``; ``/step {"env_idx", "action"}`` -> ``{"state", "reward",
"done"}``; no ``/close`` (a 404 there is accepted: its environments cannot be released). The
action is sent bare and stripped (``click[Buy Now]``): the server applies WebShop's own
``name[arg]`` pattern. Valid actions come from ``/available_actions?env_idx=`` (a search
template, then the clicks), and the paper's forced buy (``amc-method.md`` §2.4) is
``click[Buy Now]`` after the agent's last step (client option ``forced_buy``).
"""

from __future__ import annotations

import re
from functools import partial
from typing import Any

from amc.envs.agentgym.protocol import AgentGymProtocol, Idx
from amc.envs.benchmark import Benchmark, PlannerHooks, packaged_split
from amc.envs.generic import collapse, first_line
from amc.envs.webshop.prompts import PROMPTS
from amc.envs.webshop.summary import webshop_summary
from amc.types import EnvStep

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


FORCED_BUY = "click[Buy Now]"
"""The forced last action of the reference WebShop client (``smc.py``/``webshop.py``)."""


def reset_body(env_id: int, idx: Idx) -> dict[str, Any]:
    return {"env_idx": env_id, "session_id": idx}


def read_reset(data: Any) -> str:
    """The observation of a ``[obs, null]`` answer."""
    return str(data[0] if isinstance(data, list) else data)


def read_step(data: Any, score: float) -> tuple[EnvStep, float]:
    return EnvStep(str(data["state"]), float(data["reward"] or 0), bool(data["done"])), score


def menu(env: Any) -> list[str] | None:
    """As the in-process env: a search template, then the clicks (``/available_actions``)."""
    data = env.available_actions()
    if not data:
        return None
    acts = ["search[<keywords>]"] if data.get("has_search_bar") else []
    acts += [f"click[{c}]" for c in data.get("clickables", []) if c != "search"]
    return acts or None


def forced_buy(env: Any) -> str | None:
    return FORCED_BUY if env.suite.options.forced_buy else None


AGENTGYM = AgentGymProtocol(id_key="env_idx", create_body=False, reset_body=reset_body,
                            read_reset=read_reset, send_action=str.strip, read_step=read_step,
                            close_may_be_missing=True, valid_actions=menu,
                            final_action=forced_buy)

BENCHMARK = Benchmark("webshop", PROMPTS, normalise, extract_instruction, clean_state,
                      planner=planner, paper_split=partial(packaged_split, "amc.envs.webshop"),
                      agentgym=AGENTGYM,
                      observed_summary=webshop_summary)
