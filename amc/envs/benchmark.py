"""The :class:`Benchmark` record: everything the rest of AMC needs to know about one benchmark.

An environment's suite is built by its factory in :data:`amc.registry.ENVIRONMENTS`; what the
*agent*, the *value model* and the *pipeline* need besides -- prompts, how model text becomes an
action, the planner of the ``planner-mix`` prior, how the goal is read from the first
observation, the reward range, the paper's task split -- is one :class:`Benchmark` record kept in
the benchmark's own folder (``amc/envs/<bench>/benchmark.py``) and registered once by name in
:mod:`amc.envs.benchmarks`. ``priors``, ``value`` and ``pipeline`` look records up there; none of
them names a benchmark. Environments without a record (the synthetic tree, ``agentgym``) get the
generic one (:data:`amc.envs.generic.GENERIC`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from amc.envs.agentgym.protocol import AgentGymProtocol
from amc.protocols import EnvSuite
from amc.types import History


@dataclass(frozen=True)
class PromptSet:
    """The texts that describe one environment to the agent."""

    instruction: str
    """What the task is, the action grammar and the Thought/Action answer format."""
    example: str
    """A solved transcript of another task: ``Observation:``/``Action:`` lines, no thoughts."""
    reflact_instruction: str | None = None
    """Instruction for the ReflAct variant (``Reflection:`` instead of ``Thought:``)."""
    menu_example: str | None = None
    """The example with a ``Valid actions now:`` list before each action (menu style)."""


@dataclass(frozen=True)
class HistoryView:
    """What a replay-free planner reads: the benchmark's suite and the particle's history."""

    suite: EnvSuite
    history: History


Planner = Callable[[Any], str | None]
"""A replayed :class:`~amc.protocols.Environment` (or a :class:`HistoryView`) -> next action."""
Menu = Callable[[Any], list[str] | None]


def own_menu(env: Any) -> list[str] | None:
    """The environment's own ``valid_actions()`` (the default menu of a planner)."""
    return env.valid_actions()


@dataclass(frozen=True)
class PlannerHooks:
    """What a benchmark offers the ``planner-mix`` prior: its planner and, optionally, a menu."""

    next_action: Planner
    """The optimal next action in an episode's state (None: nothing left to do)."""
    menu: Menu = own_menu
    """The state's valid actions (``env.valid_actions()``, possibly memoised)."""
    replay: bool = True
    """False: the planner reads a :class:`HistoryView` and the random branch draws from the
    menu the driver attaches -- an I/O-bound environment (SciWorld's JVM) is not replayed."""
    to_menu: Callable[[Any, str], str] | None = None
    """(state, planner action) -> the same action as the state's menu writes it (None: the
    planner's actions are already the menu's)."""


def keep_state(observation: str, instruction: str) -> str:
    """The default state cleaner: the observation as it is."""
    return observation


@dataclass(frozen=True)
class Benchmark:
    """One benchmark's prompts, parser, planner, value-model rendering, reward range, split."""

    name: str
    """Its name: the :data:`~amc.registry.ENVIRONMENTS` name of its suite factory."""
    prompts: PromptSet
    """The ReAct prompts of the LLM priors (:mod:`amc.priors.prompts`)."""
    normalise: Callable[[str], str]
    """An action's text as the environment expects it (after ``Action:``, menu matching)."""
    extract_instruction: Callable[[str], str]
    """The task's goal from its (stripped) initial observation, for the value model."""
    clean_state: Callable[[str, str], str] = keep_state
    """(stripped observation, instruction) -> the observation without the repeated goal."""
    reward_range: tuple[float, float] = (0.0, 1.0)
    """(low, high) of an episode's future reward (LLM values' scale, served values' clip)."""
    planner: Callable[[], PlannerHooks] | None = None
    """The ``planner-mix`` prior's hooks, loaded on demand (None: the benchmark has none)."""
    paper_split: Callable[[str], list[int]] | None = None
    """The paper's ``"train"``/``"test"`` task ids (None: no packaged split), e.g.
    :func:`packaged_split` of the folder's ``paper_splits.json``."""
    task_identity: tuple[str, ...] = ()
    """The environment options that decide which goal a task id names (a declared test set
    applies to a run whose values of these options equal the declaration's)."""
    agentgym: AgentGymProtocol | None = None
    """The payload dialect of the benchmark's AgentGym server (the client's ``protocol``
    option names the benchmark; None: no AgentGym server speaks for it)."""
    observed_summary: Callable[[History], str | None] | None = None
    """An optional ability: a short text computed only from what the agent has observed in a
    history (its observations and actions, never the environment's hidden state), shown in
    the value model's NOW section and never in the prior's prompt (None: the benchmark offers
    none)."""


@cache
def _split_file(package: str) -> dict[str, tuple[int, ...]]:
    doc = json.loads(resources.files(package).joinpath("paper_splits.json").read_text())
    return {k: tuple(int(i) for i in v) for k, v in doc.items() if k in ("train", "test")}


def packaged_split(package: str, split: str) -> list[int]:
    """The paper's ``split`` from ``paper_splits.json`` in ``package`` (a benchmark folder):
    ``{"source": ..., "test": [...], "train": [...]}``, integer task ids, shipped with amc so a
    fresh clone runs the paper's tasks offline."""
    table = _split_file(package)
    if split not in table:
        bench = package.rpartition(".")[2]
        raise ValueError(f"{bench} paper splits are 'train' and 'test', not {split!r}")
    return list(table[split])
