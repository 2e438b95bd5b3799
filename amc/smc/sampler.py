"""The SIR driver: one task, N particles, one black-box prior, one value function.

:func:`run_task` is a short loop over the step kernel (:mod:`amc.smc.kernel`) on a frozen
population state (:mod:`amc.smc.population`): each step, every live particle asks the prior
for a turn and steps its own environment; the value model, when the schedule needs it
(:mod:`amc.smc.schedule`), twists the log-weights with the paper's Eq. 4 and V(s) = f(s) + r(s):

    log w_t = log w_{t0} + (f(s_t) - f(s_{t0}) + sum_{tau=t0+1..t} r_tau) / beta

where t0 is the last step at which f was evaluated for that particle (f(s_0) := 0 for all
particles, a constant that cancels); by telescoping this is exact. A particle that finishes
gets its last increment with f(terminal) = 0 and then keeps its weight. After the last step
an environment's forced final action is applied (:class:`~amc.protocols.ForcesFinalAction`)
and every remaining particle is weighted with f(s_T) = 0 (the horizon), so the final weighted
population targets the posterior p*(tau) ∝ pi(tau) exp(R(tau)/beta) -- not only the
intermediate ones.

Resampling draws ancestors among the *eligible* particles (live ones; also finished ones if
``resample_terminated``; never failed ones) and gives every offspring the eligible set's mean
weight, so the total mass (and the evidence estimate log Z = log mean w) is preserved. A
particle selected k times keeps its environment once and forks it k-1 times; unselected
environments close.

A particle whose prior failed for good (``AgentTurn.error``) is retired with weight zero and
recorded in ``TaskResult.failures``; it is kept in the trajectories (with its ``failure``) but
never resampled, selected or scored. Every environment is closed exactly once, also when a
step, a fork or a value call raises.

Best-of-N (``resample="never"``), ReAct (N = 1) and SMC with any value are configurations of
:func:`run_task`; see :mod:`amc.smc.methods`.

A *selection* value, when given, scores the finished task's pool post hoc, in one batched call
(:func:`amc.smc.scoring.selection_history`: each trajectory's last pre-terminal state with its
rewards masked); the trajectory it scores highest is the deployable answer. It is the same for
every method and never touches the weights. Its calls are not counted in the task's usage.
"""

from __future__ import annotations

import asyncio
import time
from contextlib import suppress
from dataclasses import replace

from amc.config import SMCConfig
from amc.protocols import EnvSuite, Prior, ValueFunction
from amc.smc.kernel import (
    Kernel,
    close_all,
    force_final_actions,
    score_states,
    start_population,
    step_rng,
    task_seed,
)
from amc.smc.population import Population, horizon
from amc.smc.records import StepInfo, TaskResult, TrajectoryRecord
from amc.smc.resampling import get_resampler
from amc.smc.schedule import Schedule
from amc.smc.scoring import selection_history, task_metrics

__all__ = ["run_task", "score_states", "step_rng", "task_seed"]


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
    selection: ValueFunction | None = None,
) -> TaskResult:
    """Run one method on one task and return its full record (diagnostics included).

    ``selection``: the value that picks the deployable answer from the pool (None: no
    deployable selection; its scores are NaN).
    """
    t_start = time.perf_counter()
    kernel = Kernel(
        prior=prior, value=value, smc=smc,
        schedule=Schedule(smc.resample, frozenset(smc.resample_steps), smc.ess_threshold,
                          smc.max_steps),
        scheme=get_resampler(smc.resampler), entropy=task_seed(seed, task_id),
        semaphore=semaphore or asyncio.Semaphore(max(smc.n_particles, 1)),
    )
    pop = await start_population(suite, task_id, smc.n_particles, smc.max_steps)
    infos: list[StepInfo] = []
    for t in range(1, smc.max_steps + 1):
        if not pop.live:
            break
        pop, info = await kernel.step(pop, t)  # on an error it has closed every environment
        infos.append(info)
    try:  # the population the last step returned: its environments are open
        log_z_prev = pop.log_w.log_mean()
        pop = horizon(await force_final_actions(pop, smc.beta), smc.beta)
    except BaseException:
        with suppress(Exception):  # a closing error must not hide the cause
            await close_all(pop.envs)
        raise
    await close_all(pop.envs)
    final, archived = pool(pop)
    scored = [r for r in final + archived if r.failure is None]
    values = await select_values(selection, scored, pop)
    return _result(pop, infos, log_z_prev, values, suite=suite, method=method, seed=seed,
                   config_hash=config_hash, smc=smc, wall_s=time.perf_counter() - t_start)


async def select_values(selection: ValueFunction | None, scored: list[TrajectoryRecord],
                        pop: Population) -> list[float] | None:
    """The selection value of each scored pool trajectory, in one batched call (or None)."""
    if selection is None or not scored:
        return None
    h0 = pop.histories[0]
    states = [selection_history(r.history(h0.task_id, h0.observation0, h0.budget))
              for r in scored]
    values, _ = await score_states(selection, states, list(range(len(states))))
    return values


def pool(pop: Population) -> tuple[list[TrajectoryRecord], list[TrajectoryRecord]]:
    """(final population in slot order, finished trajectories resampling dropped)."""
    final = [pop.record(j, j) for j in range(pop.n)]
    in_pop = set(pop.pids)
    return final, [r for r in pop.archive if r.pid not in in_pop]


def _result(pop: Population, infos: list[StepInfo], log_z_prev: float,
            values: list[float] | None, *, suite: EnvSuite, method: str, seed: int,
            config_hash: str, smc: SMCConfig, wall_s: float) -> TaskResult:
    """The task's record; failed trajectories are kept but not scored.

    ``values``: selection values of the scored pool (final + dropped, failures left out).
    """
    final, dropped = pool(pop)
    if values is not None:  # record what the selection saw, beside each trajectory
        it = iter(values)  # one value per unfailed trajectory, in pool order
        both = [r if r.failure else replace(r, selection_value=next(it)) for r in final + dropped]
        final, dropped = both[:len(final)], both[len(final):]
    scored_pool = [r for r in final + dropped if r.failure is None]
    scored = [r for r in final if r.failure is None]
    metrics = task_metrics([r.total_reward for r in scored_pool],
                           [r.final_log_weight for r in scored],
                           [r.total_reward for r in scored], smc.success_threshold,
                           values)
    metrics["log_z"] = pop.log_w.log_mean()
    metrics["log_z_increment_final"] = pop.log_w.log_mean() - log_z_prev
    task_id = pop.histories[0].task_id
    return TaskResult(
        task_id=task_id, env=suite.name, method=method, seed=seed, n_particles=pop.n,
        config_hash=config_hash, steps=tuple(infos), trajectories=tuple(final + dropped),
        metrics=metrics, usage=pop.usage, wall_s=wall_s, failures=pop.failure_log,
        observation0=pop.histories[0].observation0, budget=smc.max_steps,
    )
