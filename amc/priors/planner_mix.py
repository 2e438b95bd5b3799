"""A skill-controlled black-box prior: an optimal planner's action with probability q, else noise.

At every step the prior flips a coin with the generator the driver passes: with probability
``q`` it takes the next action of an optimal planner for the benchmark, otherwise a uniformly
random action among the valid ones (the driver's menu when it attached one, else the replayed
environment's). ``q = 1`` solves every task in the planner's number of steps; ``q = 0`` is the
``random-valid`` prior in distribution; in between, the task success probability p of the
prior is a smooth knob, which is what studying *when* SMC beats Best-of-N needs.

It is a **simulation instrument**: thousands of runs per minute, zero tokens (each call is
reported as one call of zero tokens). Its numbers say how the *method* behaves for a prior of a
given skill; they are never results of an LLM agent.

State. A prior only sees the history, so the planner's state is rebuilt by replaying the
history's actions in a fresh episode of the task (:class:`~amc.envs.replay.ReplayCache`, with a
cache of prefixes: one fork and one step per new action).

Off-menu actions. TextCraft's menu offers ``get k item`` only at counts of a single recipe,
while the planner fetches the total a plan needs at once; the prior takes the planner's action
even when the menu does not list it, because the environment accepts it (it is a simulator, not
a menu-prompted LLM). Its "optimal number of steps" is therefore the planner's, not a menu's.
With ``menu_form`` the planner's action is rewritten into the menu's own form first (the
benchmark's ``to_menu`` hook; TextCraft: :func:`amc.envs.textcraft.planner.menu_form`), so the
history no longer shows which steps were the planner's; the optimal number of steps is then the
menu-form plan's (:func:`amc.envs.textcraft.planner.menu_plan`).

Skill per subtask. ``skills`` maps a key to a skill that replaces ``q`` for a planner action
whose text contains the key as whole words (the first key in declared order that matches; e.g.
``{"craft": 0.3, "get": 0.9}``: a model that fetches reliably but crafts poorly), so a prior can
be skilled on some recipes or items and near-random on others. The coin is still drawn first
(the same draws for any skill map); the planner's action is then computed at every step to
read its skill. A change of the map between model versions changes *which* states are good
(under ``craft`` 0.3 the crafted intermediates are the scarce progress, under ``get`` 0.3 the
fetched ones), not only how often a task succeeds: the kind of prior change a drift monitor
must catch.

Skill after feedback. ``after`` maps a key to the skill of every step after an observation
that contains it (e.g. ``{"Inventory": 0.1}``: a model derailed once it lists its inventory;
``1.0``: one that grounds its plan on the listing). The trigger is text in the history, so a
value head can read it; a change of the reaction between model versions makes the states a
stale head weighs up bad (a model-version change a drift monitor must catch).

Planners (a function ``env -> next action | None`` per benchmark, plus optionally a memoised
menu: the ``planner`` of its :class:`~amc.envs.benchmark.Benchmark` record): TextCraft
(:mod:`amc.envs.textcraft.planner`) and WebShop (:mod:`amc.envs.webshop.planner`: search,
open the goal's product, choose its options, buy) and SciWorld
(:mod:`amc.envs.sciworld.planner`: ScienceWorld's gold action sequence, followed open loop,
read from the history alone -- a JVM is not replayed -- with the driver's menu for
the random branch, so ``enumerate_actions`` must be on). A Monte-Carlo rollout value
(:mod:`amc.value.rollout`) shares the prior's replay cache, so its rollouts' states are
replayed once.
Registered as prior ``planner-mix``.
"""

from __future__ import annotations

import asyncio
import re
from typing import Annotated, Any

import numpy as np
from pydantic import Field

from amc.config import Frozen
from amc.envs.benchmark import HistoryView, PlannerHooks
from amc.envs.benchmarks import benchmark_names, get_benchmark
from amc.envs.replay import ReplayCache, build_suite
from amc.protocols import EnvSuite, WantsValidActions
from amc.registry import PRIORS
from amc.types import INVALID_ACTION, AgentTurn, History, Usage


class PlannerMixOptions(Frozen):
    """Skill and caching of the planner-mix prior."""

    q: float = Field(0.5, ge=0.0, le=1.0)
    """Skill: probability of taking the optimal planner's next action at each step."""
    cache_size: int = Field(16384, ge=1)
    """Replayed states kept (LRU over history prefixes; a value's rollouts add many)."""
    skills: dict[str, Annotated[float, Field(ge=0.0, le=1.0)]] = Field(default_factory=dict)
    """Skill per subtask: key (whole words of the planner's action, e.g. ``craft`` or
    ``oak planks``) -> probability of taking that action; the first matching key in declared
    order wins, actions no key matches use ``q``."""
    after: dict[str, Annotated[float, Field(ge=0.0, le=1.0)]] = Field(default_factory=dict)
    """Skill after feedback: key (whole words of an earlier step's observation, e.g.
    ``Inventory``) -> the probability of taking the planner's action at every later step
    (replacing ``q`` and ``skills``); the first key in declared order that any earlier
    observation contains wins. How a model reacts to what it observed: ``{"Inventory": 1.0}``
    grounds its plan on an inventory listing, ``{"Inventory": 0.1}`` is derailed by it."""
    menu_form: bool = False
    """Rewrite the planner's actions into the menu's own form (e.g. ``get 9 ice`` twice, not an
    off-menu ``get 18 ice``), so the history does not show which steps were the planner's."""


def load_planner(env_name: str) -> PlannerHooks:
    """The planner hooks of a benchmark's record (a clear error when it has none)."""
    hooks = get_benchmark(env_name).planner
    if hooks is None:
        have = sorted(n for n in benchmark_names() if get_benchmark(n).planner is not None)
        raise ValueError(f"planner-mix has planners for {', '.join(have)}; not for {env_name!r}")
    return hooks()


class PlannerMixPrior(WantsValidActions):
    """With probability q the planner's action, else a uniformly random valid action."""

    wants_valid_actions: bool = False  # set per instance from the hooks (see __init__)

    def __init__(self, suite: EnvSuite, hooks: PlannerHooks, options: PlannerMixOptions) -> None:
        if options.menu_form and hooks.to_menu is None:
            raise ValueError("planner-mix menu_form needs the benchmark's menu-form hook "
                             "(its Benchmark record's PlannerHooks.to_menu)")
        self.suite, self.hooks, self.options = suite, hooks, options
        self.replay = ReplayCache(suite, options.cache_size)  # a rollout value shares it
        # replayed: the replayed environment lists the menu, only when needed; replay-free:
        # the driver attaches the particle's own environment's menu
        self.wants_valid_actions = not hooks.replay

    async def propose(self, history: History, rng: np.random.Generator) -> AgentTurn:
        if self.hooks.replay:
            env: Any = self.replay.state(history.task_id, history.actions, history.observation0)
        else:
            env = HistoryView(self.suite, history)
        # always draw the coin first, so the skill only moves the threshold on the same draws
        coin = rng.random()
        fed_back = after(self.options, history)
        if self.options.skills or fed_back is not None or coin < self.options.q:
            action = (self.hooks.next_action(env) if self.hooks.replay
                      else await asyncio.to_thread(self.hooks.next_action, env))  # may do I/O
            if action is not None and coin < (
                    skill(self.options, action) if fed_back is None else fed_back):
                if self.options.menu_form and self.hooks.to_menu is not None:
                    action = self.hooks.to_menu(env, action)
                return _turn(action)
        menu = history.valid_actions
        if menu is None and self.hooks.replay:
            menu = tuple(self.hooks.menu(env) or ())
        if not menu:
            return AgentTurn(raw_text="", action=INVALID_ACTION, usage=Usage(calls=1))
        return _turn(menu[int(rng.integers(len(menu)))])

    async def aclose(self) -> None:
        self.replay.clear()
        self.suite.close()


def skill(options: PlannerMixOptions, action: str) -> float:
    """The probability of taking the planner's ``action``: the first ``skills`` key the action
    contains as whole words (``get`` matches ``get 1 iron nugget``, not ``craft 9 iron
    nugget ...``), else ``q``."""
    return next((v for k, v in options.skills.items()
                 if re.search(rf"\b{re.escape(k)}\b", action)), options.q)


def after(options: PlannerMixOptions, history: History) -> float | None:
    """The skill set by feedback: the first ``after`` key (declared order) that an earlier
    step's observation contains as whole words, else None (no feedback seen)."""
    seen = [s.observation for s in history.steps]
    return next((v for k, v in options.after.items()
                 if any(re.search(rf"\b{re.escape(k)}\b", o) for o in seen)), None)


def _turn(action: str) -> AgentTurn:
    # same text for planner and random actions: nothing downstream can tell them apart
    return AgentTurn(raw_text=f"Action: {action}", action=action, usage=Usage(calls=1))


@PRIORS.register("planner-mix", options=PlannerMixOptions)
def make_planner_mix_prior(options: PlannerMixOptions, *, env_name: str = "",
                           env_options: Any = None, **_: object) -> PlannerMixPrior:
    """Optimal planner's action with probability q, else uniformly random valid (simulation)."""
    hooks = load_planner(env_name)
    return PlannerMixPrior(build_suite(env_name, env_options), hooks, options)
