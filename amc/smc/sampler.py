"""The SIR driver: one task, N particles, one black-box prior, one value function.

Each step, every live particle asks the prior for a turn and steps its own environment (all
concurrently, bounded by a semaphore shared across tasks). Log-weights follow the paper's
Eq. 4 with V(s) = f(s) + r(s):

    log w_t = log w_{t0} + (f(s_t) - f(s_{t0}) + sum_{tau=t0+1..t} r_tau) / beta

where t0 is the last step at which f was evaluated for that particle (f(s_0) := 0 for all
particles, a constant that cancels). The value model is called only when the schedule needs
it (:mod:`amc.smc.schedule`); by telescoping this is exact. A particle that finishes gets its
last increment with f(terminal) = 0 and then keeps its weight. After the last step every
remaining particle is weighted with f(s_T) = 0 (the horizon), so the final weighted
population targets the posterior p*(tau) ∝ pi(tau) exp(R(tau)/beta) -- not only the
intermediate ones.

Resampling draws ancestors among the *eligible* particles (live ones; also finished ones if
``resample_terminated``) and gives every offspring the eligible set's mean weight, so the
total mass (and the evidence estimate log Z = log mean w) is preserved. A particle selected
k times keeps its environment once and forks it k-1 times; unselected environments close.

Randomness: one seed per (task, run); the prior gets a generator derived from
(seed, task, step, slot), the resampler one from (seed, task, step). Results never depend on
the order in which concurrent calls complete.

Best-of-N (``resample="never"``), ReAct (N = 1) and SMC with any value are configurations of
:func:`run_task`; see :mod:`amc.smc.methods`.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field, replace

import numpy as np

from amc.config import SMCConfig
from amc.protocols import Environment, EnvSuite, Prior, ValueFunction
from amc.smc.records import StepInfo, TaskResult, TrajectoryRecord
from amc.smc.resampling import get_resampler
from amc.smc.schedule import Schedule
from amc.smc.scoring import task_metrics
from amc.smc.weights import DegenerateWeightsWarning, LogWeights
from amc.types import History, Step, Usage


def task_seed(seed: int, task_id: str) -> list[int]:
    """Entropy for one (run seed, task): stable across processes (no Python hash)."""
    digest = int.from_bytes(hashlib.sha256(task_id.encode()).digest()[:8], "little")
    return [int(seed), digest]


async def score_states(value: ValueFunction, histories: list[History]
                       ) -> tuple[list[float], Usage]:
    """Values of live particles and what they cost: LLM values report their calls' usage
    (``score_with_usage``), so a task's tokens include its value calls, as in the paper."""
    if not histories:
        return [], Usage()
    with_usage = getattr(value, "score_with_usage", None)
    if with_usage is not None:
        return await with_usage(histories)
    return await value.score(histories), Usage()


def step_rng(entropy: list[int], *key: int) -> np.random.Generator:
    """An independent generator for one (purpose, step, slot) of a task."""
    return np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=key))


@dataclass
class _Particle:
    """Mutable bookkeeping of one population slot (internal to the driver)."""

    pid: int
    history: History
    env: Environment
    f_last: float = 0.0  # f at the last evaluation (f(s_0) := 0)
    r_since: float = 0.0  # reward since the last weight update
    finished: bool = False
    failure: str | None = None
    lineage: tuple[int, ...] = field(default_factory=tuple)


async def _call(env: Environment, fn: str, *args: object) -> object:
    """Call an environment method, in a worker thread if the environment does I/O."""
    meth = getattr(env, fn)
    return await asyncio.to_thread(meth, *args) if env.io_bound else meth(*args)


async def run_task(
    *,
    suite: EnvSuite,
    prior: Prior,
    value: ValueFunction,
    task_id: str,
    smc: SMCConfig,
    seed: int,
    method: str = "smc",
    config_hash: str = "",
    semaphore: asyncio.Semaphore | None = None,
) -> TaskResult:
    """Run one method on one task and return its full record (diagnostics included)."""
    t_start = time.perf_counter()
    n, beta = smc.n_particles, smc.beta
    sched = Schedule(smc.resample, frozenset(smc.resample_steps), smc.ess_threshold, smc.max_steps)
    resample = get_resampler(smc.resampler)
    sem = semaphore or asyncio.Semaphore(max(n, 1))
    wants_menu = bool(getattr(prior, "wants_valid_actions", False))
    entropy = task_seed(seed, task_id)

    env0 = suite.make()
    obs0 = str(await _call(env0, "reset", task_id))
    envs = [env0, *[await _call(env0, "fork") for _ in range(n - 1)]]
    parts = [_Particle(i, History(task_id, obs0), e) for i, e in enumerate(envs)]
    next_pid = n
    logw = LogWeights.uniform(n)
    archive: list[TrajectoryRecord] = []
    infos: list[StepInfo] = []
    usage, failures = Usage(), []
    log_z_prev = logw.log_mean()

    def finish(i: int) -> None:
        """Final increment with f(terminal) = 0; archive the trajectory."""
        nonlocal logw
        p = parts[i]
        inc = np.zeros(n)
        inc[i] = (p.r_since - p.f_last) / beta
        logw = logw.add(inc)
        p.f_last = p.r_since = 0.0
        p.finished = True
        archive.append(_record(p, None, float(logw.log_w[i])))

    async def advance(i: int, t: int) -> tuple[int, object, object]:
        p = parts[i]
        async with sem:
            h = p.history
            if wants_menu:
                h = h.with_valid_actions(await _call(p.env, "valid_actions"))
            turn = await prior.propose(h, step_rng(entropy, 1, t, i))
            if turn.error is not None:
                return i, turn, None
            return i, turn, await _call(p.env, "step", turn.action)

    try:
        for t in range(1, smc.max_steps + 1):
            live = [i for i, p in enumerate(parts) if not p.finished]
            if not live:
                break
            for i, turn, res in await asyncio.gather(*(advance(i, t) for i in live)):
                p = parts[i]
                usage = usage + turn.usage
                if res is None:  # the prior failed for good: retire the particle
                    p.failure = turn.error
                    failures.append({"t": t, "particle": i, "error": turn.error})
                    finish(i)
                    continue
                step = Step(turn.raw_text, turn.action, res.observation, float(res.reward),
                            bool(res.done), turn.usage, dict(res.info))
                p.history = p.history.extend(step)
                p.r_since += step.reward
                if step.done:
                    finish(i)

            values: list[float | None] = [None] * n
            resampled, ancestors, degenerate = False, None, False
            if sched.evaluates_value(t):
                live = [i for i, p in enumerate(parts) if not p.finished]
                f, v_usage = await score_states(value, [parts[i].history for i in live])
                usage = usage + v_usage
                inc = np.zeros(n)
                for i, fi in zip(live, f, strict=True):
                    p, values[i] = parts[i], float(fi)
                    inc[i] = (p.r_since + fi - p.f_last) / beta
                    p.f_last, p.r_since = float(fi), 0.0
                logw = logw.add(inc)
            ess_pre, lw_pre = logw.ess(), logw.log_w.tolist()  # diagnostics before resampling
            if sched.evaluates_value(t):
                elig = np.array([smc.resample_terminated or not p.finished for p in parts])
                sub = LogWeights(logw.log_w[elig]) if elig.any() else None
                if sub is not None and sched.resamples(t, sub.ess() * n / sub.n, n):
                    with warnings.catch_warnings(record=True) as caught:
                        warnings.simplefilter("always", DegenerateWeightsWarning)
                        W = sub.normalised()
                    degenerate = any(issubclass(w.category, DegenerateWeightsWarning)
                                     for w in caught)
                    idx = np.flatnonzero(elig)
                    picks = idx[resample(W, idx.size, step_rng(entropy, 2, t))]
                    ancestors = np.arange(n)
                    ancestors[idx] = picks
                    parts, next_pid = await _repopulate(parts, ancestors, next_pid)
                    new_lw = logw.log_w.copy()
                    new_lw[idx] = sub.log_mean()  # preserve the eligible set's total mass
                    logw, resampled = LogWeights(new_lw), True
            log_z = logw.log_mean()
            infos.append(StepInfo(
                t=t, ess=ess_pre, resampled=resampled,
                ancestors=None if ancestors is None else ancestors.tolist(),
                log_weights=lw_pre, values=values,
                log_z_increment=log_z - log_z_prev, n_live=sum(not p.finished for p in parts),
                degenerate=degenerate,
            ))
            log_z_prev = log_z

        await _forced_final_actions(parts, finish)
        for i, p in enumerate(parts):  # horizon: f(s_T) = 0 for every unfinished particle
            if not p.finished:
                logw = logw.add(np.where(np.arange(n) == i, (p.r_since - p.f_last) / beta, 0.0))
                p.f_last = p.r_since = 0.0
    finally:
        for p in {id(p.env): p for p in parts}.values():
            await _call(p.env, "close")

    final = [_record(p, j, float(logw.log_w[j])) for j, p in enumerate(parts)]
    in_pop = {p.pid for p in parts}
    dropped = [r for r in archive if r.pid not in in_pop]
    trajs = final + dropped
    metrics = task_metrics([r.total_reward for r in trajs], logw.log_w.tolist(),
                           [r.total_reward for r in final], smc.success_threshold)
    metrics["log_z"] = logw.log_mean()
    metrics["log_z_increment_final"] = logw.log_mean() - log_z_prev
    return TaskResult(
        task_id=task_id, env=suite.name, method=method, seed=seed, n_particles=n,
        config_hash=config_hash, steps=tuple(infos), trajectories=tuple(trajs),
        metrics=metrics, usage=usage, wall_s=time.perf_counter() - t_start,
        failures=tuple(failures), observation0=obs0,
    )


async def _forced_final_actions(parts: list[_Particle], finish) -> None:
    """Apply an environment's forced last action (WebShop's buy) to unfinished particles.

    Identical for every method; no agent turn is recorded (the raw text is empty).
    """
    todo = [i for i, p in enumerate(parts) if not p.finished and hasattr(p.env, "final_action")]
    actions = [await _call(parts[i].env, "final_action") for i in todo]
    todo = [(i, a) for i, a in zip(todo, actions, strict=True) if a]
    results = await asyncio.gather(*(_call(parts[i].env, "step", a) for i, a in todo))
    for (i, a), res in zip(todo, results, strict=True):
        p = parts[i]
        p.history = p.history.extend(Step("", a, res.observation, float(res.reward),
                                          bool(res.done), Usage(), {**res.info, "forced": True}))
        p.r_since += float(res.reward)
        if res.done:
            finish(i)


def _record(p: _Particle, slot: int | None, log_w: float) -> TrajectoryRecord:
    return TrajectoryRecord(
        pid=p.pid, slot=slot, lineage=p.lineage, steps=p.history.steps,
        total_reward=p.history.total_reward, done=p.history.done, final_log_weight=log_w,
        failure=p.failure,
    )


async def _repopulate(
    parts: list[_Particle], ancestors: np.ndarray, next_pid: int
) -> tuple[list[_Particle], int]:
    """New population from ancestor indices: first copy keeps the env, others fork it."""
    counts = Counter(ancestors.tolist())
    seen: set[int] = set()
    jobs: list[tuple[int, bool]] = []  # per new slot: (ancestor, keeps the ancestor's env)
    for a in ancestors.tolist():
        jobs.append((a, a not in seen))
        seen.add(a)
    forks = await asyncio.gather(*(_call(parts[a].env, "fork") for a, keep in jobs if not keep))
    fork_iter = iter(forks)
    new: list[_Particle] = []
    for a, keep in jobs:
        src = parts[a]
        env = src.env if keep else next(fork_iter)
        pid = src.pid if keep else next_pid
        next_pid += 0 if keep else 1
        new.append(replace(src, pid=pid, env=env, lineage=(*src.lineage, a)))
    for i, p in enumerate(parts):  # close environments nobody inherited
        if counts.get(i, 0) == 0:
            await _call(p.env, "close")
    return new, next_pid
