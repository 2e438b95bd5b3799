"""The SMC step kernel: (population, t) -> (population, StepInfo), and its environment I/O.

One step of :class:`Kernel` is

1. **propagate** (async): every live particle asks the prior for a turn (with the valid
   actions attached if the prior wants them) and steps its own environment, concurrently
   under a semaphore shared across tasks; :func:`~amc.smc.population.absorb` applies the
   outcomes in slot order.
2. **reweight**: when the schedule evaluates the value model, the live particles' values
   twist their weights (:func:`~amc.smc.population.reweight`). Values are checked at this
   boundary: a non-finite one is an error naming the value model and the state.
3. **resample** (pure, :func:`~amc.smc.population.resample`) when the schedule says so, then
   the forks the new population needs (async) and :func:`~amc.smc.population.reindex`.

Randomness: the prior gets a generator derived from (seed, task, step, slot), the resampler
one from (seed, task, step); concurrent calls are gathered in slot order, so results never
depend on the order in which they complete.

Environment I/O goes through :func:`run_io` (a worker thread for ``io_bound`` environments).
On an error nothing leaks and nothing runs on a closed environment: sibling calls are
cancelled and awaited before the error propagates (a call already in a thread runs to its
end), a failed fork closes the forks that succeeded, and :func:`close_all` closes each
environment once. :meth:`Kernel.step` owns the population's environments: it closes the ones
resampling drops, and all of them when it fails, so its caller only ever closes a population
the step returned.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
from collections.abc import Awaitable, Callable, Iterable, Sequence
from contextlib import suppress
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import numpy as np

from amc.config import SMCConfig
from amc.protocols import (
    Environment,
    EnvSuite,
    ForcesFinalAction,
    Prior,
    ReportsUsage,
    ValueFunction,
    WantsValidActions,
)
from amc.smc.population import (
    Outcome,
    Population,
    absorb,
    apply_steps,
    eligible_ess_fraction,
    offspring_plan,
    reindex,
    resample,
    reweight,
)
from amc.smc.records import StepInfo
from amc.smc.resampling import Resampler
from amc.smc.schedule import Schedule
from amc.types import History, Step, Usage

R = TypeVar("R")


def task_seed(seed: int, task_id: str) -> list[int]:
    """Entropy for one (run seed, task): stable across processes (no Python hash)."""
    digest = int.from_bytes(hashlib.sha256(task_id.encode()).digest()[:8], "little")
    return [int(seed), digest]


def step_rng(entropy: list[int], *key: int) -> np.random.Generator:
    """An independent generator for one (purpose, step, slot) of a task."""
    return np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=key))


# ---------------------------------------------------------------- environment I/O


async def run_io(env: Environment, fn: Callable[..., R], *args: Any) -> R:
    """``fn(*args)`` (a method of ``env``), in a worker thread if the environment does I/O.

    If the caller is cancelled while the thread runs, this waits for the thread to finish
    before letting the cancellation through, so the environment is never closed under it.
    """
    if not env.io_bound:
        return fn(*args)
    job = asyncio.ensure_future(asyncio.to_thread(fn, *args))
    try:
        return await asyncio.shield(job)
    except asyncio.CancelledError:
        await asyncio.wait({job})
        raise


async def gather_settled(calls: Iterable[Awaitable[R]]) -> list[R]:
    """Results in input order; on the first error the others are cancelled and awaited
    (none keeps running on an environment about to be closed), then the error is raised."""
    tasks = [asyncio.ensure_future(c) for c in calls]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


async def close_all(envs: Iterable[Environment]) -> None:
    """Close each distinct environment once; every one is tried, then the first error
    (if any) is raised."""
    first: BaseException | None = None
    for env in {id(e): e for e in envs}.values():
        try:
            await run_io(env, env.close)
        except Exception as err:  # keep closing the others
            first = first or err
    if first is not None:
        raise first


async def fork_all(parents: Sequence[Environment]) -> list[Environment]:
    """One fork of each parent (concurrently). If any fails, the forks that succeeded are
    closed and the first error is raised; forks are awaited even on cancellation."""
    gathered = asyncio.gather(*(run_io(p, p.fork) for p in parents), return_exceptions=True)
    try:
        results = await asyncio.shield(gathered)
        cancelled = None
    except asyncio.CancelledError as err:
        results, cancelled = await gathered, err
    forks = [r for r in results if not isinstance(r, BaseException)]
    errors = [r for r in results if isinstance(r, BaseException)]
    if cancelled is None and not errors:
        return forks
    with suppress(Exception):
        await close_all(forks)
    raise cancelled or errors[0]


async def start_population(suite: EnvSuite, task_id: str, n: int,
                           budget: int | None = None) -> Population:
    """Reset one environment and fork it N - 1 times; on failure close what was made."""
    env0 = suite.make()
    envs = [env0]
    try:
        obs0 = str(await run_io(env0, env0.reset, task_id))
        for _ in range(n - 1):  # sequential: an environment is forked by one thread at once
            envs.append(await run_io(env0, env0.fork))
    except BaseException:
        with suppress(Exception):
            await close_all(envs)
        raise
    return Population.start(task_id, obs0, envs, budget)


async def force_final_actions(pop: Population, beta: float) -> Population:
    """Step an environment's forced last action (WebShop's buy) on unfinished particles.

    Identical for every method; no agent turn is recorded (the raw text is empty).
    """
    todo: list[int] = []
    actions: list[str | None] = []
    for i in pop.live:
        env = pop.envs[i]
        if isinstance(env, ForcesFinalAction):
            todo.append(i)
            actions.append(await run_io(env, env.final_action))
    todo_actions = [(i, a) for i, a in zip(todo, actions, strict=True) if a]
    results = await gather_settled(run_io(pop.envs[i], pop.envs[i].step, a)
                                   for i, a in todo_actions)
    steps = [(i, Step("", a, res.observation, float(res.reward), bool(res.done), Usage(),
                      {**res.info, "forced": True}))
             for (i, a), res in zip(todo_actions, results, strict=True)]
    return apply_steps(pop, steps, beta)


# ---------------------------------------------------------------- the value boundary


def checked_values(value: object, f: Sequence[float], histories: Sequence[History],
                   slots: Sequence[int]) -> list[float]:
    """The values as floats; a wrong count or a non-finite value is a clear error."""
    name = type(value).__name__
    if len(f) != len(histories):
        raise ValueError(f"value model {name} returned {len(f)} values for "
                         f"{len(histories)} states")
    out = [float(x) for x in f]
    for x, h, i in zip(out, histories, slots, strict=True):
        if not math.isfinite(x):
            shown = "NaN" if math.isnan(x) else f"{x:+}"
            raise ValueError(f"value model {name} gave a non-finite value ({shown}) for "
                             f"particle {i} of task {h.task_id!r} after step {h.t}; "
                             f"values must be finite")
    return out


async def score_states(value: ValueFunction, histories: list[History], slots: list[int]
                       ) -> tuple[list[float], Usage]:
    """Values of live particles and what they cost (LLM values report their calls' usage,
    so a task's tokens include its value calls, as in the paper)."""
    if not histories:
        return [], Usage()
    if isinstance(value, ReportsUsage):
        f, usage = await value.score_with_usage(histories)
    else:
        f, usage = await value.score(histories), Usage()
    return checked_values(value, f, histories, slots), usage


# ---------------------------------------------------------------- the kernel


@dataclass(frozen=True)
class Kernel:
    """What one task's steps need besides the population: components, schedule, seeds."""

    prior: Prior
    value: ValueFunction
    smc: SMCConfig
    schedule: Schedule
    scheme: Resampler
    entropy: list[int]
    semaphore: asyncio.Semaphore

    @property
    def menu(self) -> bool:
        """Whether the prior wants the valid actions attached (default: no)."""
        return isinstance(self.prior, WantsValidActions) and bool(self.prior.wants_valid_actions)

    async def propagate(self, pop: Population, t: int) -> list[Outcome]:
        """One turn of the prior and one environment step per live particle."""
        menu = self.menu

        async def advance(i: int) -> Outcome:
            env = pop.envs[i]
            async with self.semaphore:
                h = pop.histories[i]
                if menu:
                    h = h.with_valid_actions(await run_io(env, env.valid_actions))
                turn = await self.prior.propose(h, step_rng(self.entropy, 1, t, i))
                if turn.error is not None:
                    return i, turn, None
                return i, turn, await run_io(env, env.step, turn.action)

        return await gather_settled(advance(i) for i in pop.live)

    async def step(self, pop: Population, t: int) -> tuple[Population, StepInfo]:
        """Step t (1-based): the new population and its diagnostics.

        The step owns ``pop``'s environments. On return the new population holds every open
        one (those resampling dropped are closed here); on an error every environment the step
        was given or made is closed, each once, before the error propagates (``pop`` is not
        to be used again).
        """
        try:
            new, info, dropped = await self._advance(pop, t)
        except BaseException:
            with suppress(Exception):  # a closing error must not hide the cause
                await close_all(pop.envs)
            raise
        try:
            await close_all(dropped)
        except BaseException:
            with suppress(Exception):
                await close_all(new.envs)
            raise
        return new, info

    async def _advance(self, pop: Population, t: int
                       ) -> tuple[Population, StepInfo, list[Environment]]:
        """Propagate, reweight, resample: the new population, its diagnostics and the
        environments resampling dropped (still open)."""
        n, beta, log_z_prev = pop.n, self.smc.beta, pop.log_w.log_mean()
        pop = absorb(pop, await self.propagate(pop, t), t, beta)
        values: list[float | None] = [None] * n
        evaluates = self.schedule.evaluates_value(t)
        if evaluates:
            live = pop.live
            f, usage = await score_states(self.value, [pop.histories[i] for i in live], live)
            pop = replace(reweight(pop, live, f, beta), usage=pop.usage + usage)
            if not getattr(self.value, "constant_by_design", False):  # f = 0: no value
                for i, fi in zip(live, f, strict=True):
                    values[i] = fi
        ess, log_w = pop.log_w.ess(), pop.log_w.log_w.tolist()  # what resampling sees
        res, decisive = None, None
        dropped: list[Environment] = []
        elig = pop.eligible(self.smc.resample_terminated)
        if evaluates and elig.any():
            decisive = eligible_ess_fraction(pop.log_w, elig)
        if decisive is not None and self.schedule.resamples(t, decisive, n):
            res = resample(pop.log_w, elig, self.scheme, step_rng(self.entropy, 2, t))
            parents = [pop.envs[a] for a, keep in offspring_plan(res.ancestors.tolist())
                       if not keep]
            pop, dropped = reindex(pop, res, await fork_all(parents))
        info = StepInfo(
            t=t, ess=ess, resampled=res is not None,
            ancestors=None if res is None else res.ancestors.tolist(), log_weights=log_w,
            values=values, log_z_increment=pop.log_w.log_mean() - log_z_prev,
            n_live=len(pop.live), degenerate=res is not None and res.degenerate,
            resample_ess=decisive,
        )
        return pop, info, dropped
