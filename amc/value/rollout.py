"""A Monte-Carlo upper-bound value: f(s) from M rollouts of the prior itself from state s.

The optimal twist of SMC is the soft value of the future reward under the prior,

    f*(s) = beta * log E_pi[ exp(R_future(s) / beta) | s ],

(``beta`` -> infinity gives the mean future reward). With a cheap prior it can simply be
estimated: replay the history in a fresh episode, run M rollouts of the run's prior from there
until they finish or the step budget ends (``max_steps - t`` more steps), and take

    f(s) = beta * log( (1/M) * sum_m exp(R_m / beta) ).

This is not a practical value (M rollouts per particle state cost far more prior calls than the
particles themselves); it is the ceiling a perfect learned V_theta would reach, so that a sweep
separates "the value is weak" from "the method has no room". The estimate is biased low for
finite M (Jensen) and exact as M grows.

Determinism: each state's rollouts use one generator seeded from (``seed``, task id, actions),
so f is a function of the state alone: it never depends on the order of calls, and identical
particle states get identical values (also cached).

States. For an in-process environment, rollouts step through a
:class:`~amc.envs.replay.ReplayCache` (the prior's own when it has one, as ``planner-mix`` does),
so the prior finds every rollout state already replayed. An I/O-bound environment (SciWorld's
JVM) cannot be replayed in the event loop; if it declares the
:class:`~amc.protocols.RestoresHistory` ability, each state is restored once into a new
environment of the suite, and every rollout steps its *own* fork of it (in a worker thread),
closed when the rollout ends; the restored root is closed last. Both ways give the same
estimate for the same seed (the rollouts see the same states and menus and draw from the same
generator); ``states`` picks one (``auto``: replay in process, forks otherwise).

The episode's end. A rollout that uses up the budget unfinished ends as the driver ends a
particle: an environment that declares :class:`~amc.protocols.ForcesFinalAction` (WebShop's buy
of the item page the episode stopped on) has its forced action stepped once more, and its
reward counts. Without it the value of a state that the buy would score is 0 where the episode
is scored, and the "upper bound" is not one.

Usage: the rollouts' prior turns are reported through ``score_with_usage`` (zero tokens for the
simulated priors, one call each), so a task's record shows how many prior calls the value made.
Registered as value ``rollout``.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Literal, Protocol

import numpy as np
from pydantic import Field

from amc.config import Frozen
from amc.envs.replay import ReplayCache, build_suite
from amc.protocols import (
    Environment,
    EnvSuite,
    ForcesFinalAction,
    Prior,
    ReportsUsage,
    RestoresHistory,
    WantsValidActions,
)
from amc.registry import VALUES
from amc.smc.kernel import run_io
from amc.smc.weights import logsumexp
from amc.types import EnvStep, History, Step, Usage

_ONE_CALL = Usage(calls=1)


class RolloutValueOptions(Frozen):
    """Rollouts, budget and seed of the Monte-Carlo value."""

    n_rollouts: int = Field(16, ge=1)
    """M, the rollouts of the prior per particle state."""
    max_steps: int = Field(ge=1)
    """The run's step budget (smc.max_steps): a rollout from step t takes at most
    max_steps - t steps, as the particle itself would."""
    seed: int = 0
    """Seed of the rollouts (combined with the state, so f is a function of the state)."""
    cache_size: int = Field(65536, ge=0)
    """Values kept per state (LRU; 0 disables). Exact: f is a function of the state."""
    replay_cache_size: int = Field(16384, ge=1)
    """Replayed states kept (LRU over history prefixes) when the prior has no replay cache of
    its own to share."""
    final_action: bool = True
    """End a rollout that uses up the budget unfinished with the environment's forced final
    action (ForcesFinalAction), as the driver does; False reproduces records made before."""
    concurrent: bool = False
    """Run the M rollouts of a state, and the states of one call, concurrently, each rollout on
    its own generator spawned from the state's entropy (order-independent): a batching prior
    (``hf``) then decodes them as one batch instead of one call at a time. In-process
    environments only (``fork`` states stay sequential). False: one generator per state, the
    rollouts one after another, as records made before."""
    states: Literal["auto", "replay", "fork"] = "auto"
    """How a rollout gets its state: ``replay`` in process (replay cache), ``fork`` of the state
    restored by the environment (its RestoresHistory ability), ``auto``: replay for in-process
    environments, fork for I/O-bound ones."""


def soft_mean(returns: np.ndarray, beta: float) -> float:
    """beta * log mean exp(returns / beta), computed stably (shape (M,) -> scalar)."""
    if returns.size == 0:
        raise ValueError("soft_mean needs at least one return")
    return float(beta * (logsumexp(returns / beta) - np.log(returns.size)))


def state_entropy(seed: int, history: History) -> list[int]:
    """Entropy for one state's rollouts: stable across processes (no Python hash)."""
    blob = "\x1f".join((history.task_id, *history.actions)).encode()
    return [int(seed), int.from_bytes(hashlib.sha256(blob).digest()[:8], "little")]


class _Walk(Protocol):
    """How a rollout reads the menu and steps: through the replay cache or its own fork."""

    async def menu(self, task_id: str, actions: tuple[str, ...]) -> list[str] | None: ...

    async def step(self, task_id: str, actions: tuple[str, ...], action: str) -> EnvStep: ...

    async def final(self, task_id: str, actions: tuple[str, ...]) -> EnvStep | None: ...


class _ReplayWalk:
    def __init__(self, replay: ReplayCache) -> None:
        self.replay = replay

    async def menu(self, task_id: str, actions: tuple[str, ...]) -> list[str] | None:
        return self.replay.state(task_id, actions).valid_actions()

    async def step(self, task_id: str, actions: tuple[str, ...], action: str) -> EnvStep:
        return self.replay.step(task_id, actions, action)[1]

    async def final(self, task_id: str, actions: tuple[str, ...]) -> EnvStep | None:
        env = self.replay.state(task_id, actions)
        a = env.final_action() if isinstance(env, ForcesFinalAction) else None
        return self.replay.step(task_id, actions, a)[1] if a else None


class _ForkWalk:
    """A rollout's own environment, already at the rollout's state (task and actions unused)."""

    def __init__(self, env: Environment) -> None:
        self.env = env

    async def menu(self, task_id: str, actions: tuple[str, ...]) -> list[str] | None:
        return await run_io(self.env, self.env.valid_actions)

    async def step(self, task_id: str, actions: tuple[str, ...], action: str) -> EnvStep:
        return await run_io(self.env, self.env.step, action)

    async def final(self, task_id: str, actions: tuple[str, ...]) -> EnvStep | None:
        env = self.env
        a = await run_io(env, env.final_action) if isinstance(env, ForcesFinalAction) else None
        return await run_io(env, env.step, a) if a else None


class RolloutValue(ReportsUsage):
    """f(s) = beta log mean exp(R_m / beta) over M rollouts of ``prior`` from s."""

    def __init__(self, suite: EnvSuite, prior: Prior, beta: float,
                 options: RolloutValueOptions) -> None:
        self.suite, self.prior, self.beta, self.options = suite, prior, beta, options
        shared = getattr(prior, "replay", None)  # the planner-mix prior's cache, if any
        self.replay = (shared if isinstance(shared, ReplayCache) and shared.suite.name == suite.name
                       else ReplayCache(suite, options.replay_cache_size))
        self._cache: OrderedDict[tuple[str, tuple[str, ...]], float] = OrderedDict()
        self._wants_menu = isinstance(prior, WantsValidActions) and bool(prior.wants_valid_actions)
        self._fork_mode: bool | None = None

    async def score(self, histories: Sequence[History]) -> list[float]:
        return (await self.score_with_usage(histories))[0]

    async def score_with_usage(self, histories: Sequence[History]
                               ) -> tuple[list[float], Usage]:
        """One value per history, and the usage of every prior turn the rollouts took."""
        if self.options.concurrent:
            return await self._score_concurrently(histories)
        out, usage = [], Usage()
        for h in histories:
            key = (h.task_id, h.actions)
            if key in self._cache:
                self._cache.move_to_end(key)
                out.append(self._cache[key])
                continue
            f, u = await self.estimate(h)
            out.append(f)
            usage = usage + u
            if self.options.cache_size:
                self._cache[key] = f
                while len(self._cache) > self.options.cache_size:
                    self._cache.popitem(last=False)
        return out, usage

    async def _score_concurrently(self, histories: Sequence[History]
                                  ) -> tuple[list[float], Usage]:
        """:meth:`score_with_usage` with every uncached distinct state estimated at once."""
        keys = [(h.task_id, h.actions) for h in histories]
        todo = {k: h for k, h in zip(keys, histories, strict=True) if k not in self._cache}
        done = dict(zip(todo, await asyncio.gather(*(self.estimate(h) for h in todo.values())),
                        strict=True))
        usage = sum((u for _, u in done.values()), Usage())
        out = [done[k][0] if k in done else self._cache[k] for k in keys]
        for k in keys:
            if k in done and self.options.cache_size:
                self._cache[k] = done[k][0]
            if k in self._cache:
                self._cache.move_to_end(k)
        while len(self._cache) > self.options.cache_size:
            self._cache.popitem(last=False)
        return out, usage

    async def estimate(self, history: History) -> tuple[float, Usage]:
        """(f(s), usage) for one state, without the cache."""
        returns, usage = await self.returns(history)
        return (soft_mean(returns, self.beta) if returns.size else 0.0), usage

    async def returns(self, history: History) -> tuple[np.ndarray, Usage]:
        """The M rollouts' future rewards from a state (shape (M,); empty when nothing can
        follow: a finished episode or no step left) and the prior's usage."""
        budget = self.options.max_steps - history.t
        if history.done or budget <= 0:
            return np.zeros(0), Usage()
        rng = np.random.default_rng(state_entropy(self.options.seed, history))
        if self._forks():
            return await self._forked_returns(history, budget, rng)
        self.replay.state(history.task_id, history.actions, history.observation0)  # checks s
        if self.options.concurrent:
            entropy = state_entropy(self.options.seed, history)
            done = await asyncio.gather(*(
                self._rollout(history, budget, np.random.default_rng([*entropy, m]),
                              _ReplayWalk(self.replay)) for m in range(self.options.n_rollouts)))
            return np.array([r for r, _ in done]), sum((u for _, u in done), Usage())
        returns = np.zeros(self.options.n_rollouts)
        usage = Usage()
        for m in range(returns.size):  # sequential on one generator: order-independent
            returns[m], u = await self._rollout(history, budget, rng, _ReplayWalk(self.replay))
            usage = usage + u
        return returns, usage

    def _forks(self) -> bool:
        """Whether states are restored and forked (decided once, from one new environment)."""
        if self._fork_mode is None:
            env = self.suite.make()
            try:
                io_bound, restores = env.io_bound, isinstance(env, RestoresHistory)
            finally:
                env.close()
            mode = self.options.states
            self._fork_mode = mode == "fork" or (mode == "auto" and io_bound)
            if self._fork_mode and not restores:
                raise ValueError(f"the rollout value forks states by restoring them, and "
                                 f"{self.suite.name}'s environment has no restore "
                                 "(RestoresHistory)")
        return self._fork_mode

    async def _forked_returns(self, h: History, budget: int, rng: np.random.Generator
                              ) -> tuple[np.ndarray, Usage]:
        """The fork path: restore s once, then each rollout on its own fork, closed after it."""
        root = self.suite.make()
        returns, usage = np.zeros(self.options.n_rollouts), Usage()
        try:
            assert isinstance(root, RestoresHistory)  # checked by _forks
            await run_io(root, root.restore, h)
            for m in range(returns.size):  # sequential on one generator: order-independent
                env = await run_io(root, root.fork)
                try:
                    returns[m], u = await self._rollout(h, budget, rng, _ForkWalk(env))
                finally:
                    await run_io(env, env.close)
                usage = usage + u
        finally:
            await run_io(root, root.close)
        return returns, usage

    async def _rollout(self, h: History, budget: int, rng: np.random.Generator,
                       walk: _Walk) -> tuple[float, Usage]:
        """Future reward of one rollout of the prior from ``h``, stepping through ``walk`` (the
        replay cache, where a prior that shares it finds each state already replayed, or the
        rollout's own fork)."""
        total, usage, calls = 0.0, Usage(), 0
        steps, actions = h.steps, h.actions
        for _ in range(budget):
            seen = History(h.task_id, h.observation0, steps)  # what the driver would pass
            if self._wants_menu:
                seen = seen.with_valid_actions(await walk.menu(h.task_id, actions))
            turn = await self.prior.propose(seen, rng)
            if turn.usage == _ONE_CALL:  # the cheap priors' usage: count, skip the addition
                calls += 1
            else:
                usage = usage + turn.usage
            if turn.error is not None:  # the driver retires such a particle: no more reward
                break
            res = await walk.step(h.task_id, actions, turn.action)
            total += float(res.reward)
            if res.done:
                break
            steps = (*steps, Step(turn.raw_text, turn.action, res.observation, float(res.reward),
                                  bool(res.done), turn.usage, res.info))
            actions = (*actions, turn.action)
        else:  # the budget ended unfinished: the driver's forced last action (no agent turn)
            forced = await walk.final(h.task_id, actions) if self.options.final_action else None
            total += float(forced.reward) if forced is not None else 0.0
        return total, usage + Usage(calls=calls)

    async def aclose(self) -> None:
        self._cache.clear()
        self.suite.close()


@VALUES.register("rollout", options=RolloutValueOptions)
def make_rollout_value(options: RolloutValueOptions, *, env_name: str = "",
                       env_options: Any = None, beta: float = 1.0, prior: Prior | None = None,
                       **_: object) -> RolloutValue:
    """Monte-Carlo soft value from M rollouts of the run's prior (an upper-bound instrument)."""
    if prior is None:
        raise ValueError("the rollout value needs the run's prior (factory context prior=)")
    return RolloutValue(build_suite(env_name, env_options), prior, beta, options)
