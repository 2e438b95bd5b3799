"""The population state of one task and the pure parts of the SMC step kernel.

A :class:`Population` is a frozen snapshot of the N particle slots of one task: per slot its
history, environment, log-weight, the value f at its last evaluation, the reward collected
since then, whether it finished (and why, if it failed) and its lineage, plus what the task
has accumulated so far (finished trajectories, usage, failures). Every function here returns a
new population; none does I/O. The kernel that strings them together, calling the prior,
the environments and the value model, is :mod:`amc.smc.kernel`:

    propagate (async)  ->  absorb       new steps, finished particles, failures
    value (async)      ->  reweight     Delta log w with the new values
                       ->  resample     ancestors, new log-weights (pure)
    forks (async)      ->  reindex      the offspring population

Weights follow the README's equation (:func:`~amc.smc.weights.log_weight_increment`): a
particle that finishes gets its last increment with f(terminal) = 0 and then keeps its
weight; :func:`horizon` closes every unfinished one with f(s_T) = 0 after the last step. A
particle whose prior failed for good is retired with weight zero (log-weight -inf): it never
competes in resampling, selection or the metrics.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from amc.protocols import Environment
from amc.smc.records import TrajectoryRecord
from amc.smc.resampling import Resampler
from amc.smc.weights import LogWeights, log_weight_increment
from amc.types import AgentTurn, EnvStep, History, Step, Usage


@dataclass(frozen=True)
class Population:
    """N particle slots of one task (tuples indexed by slot) and the task's running totals."""

    histories: tuple[History, ...]
    envs: tuple[Environment, ...]
    log_w: LogWeights
    f_last: tuple[float, ...]  # f at the last evaluation (f(s_0) := 0), reward units
    r_since: tuple[float, ...]  # reward collected since that evaluation
    finished: tuple[bool, ...]
    failures: tuple[str | None, ...]  # the prior's error for a failed particle
    pids: tuple[int, ...]  # trajectory ids; a fork gets a new one
    lineages: tuple[tuple[int, ...], ...]  # ancestor slot at each resampling
    next_pid: int
    archive: tuple[TrajectoryRecord, ...] = ()  # every trajectory when it finished
    usage: Usage = field(default_factory=Usage)  # prior and value calls billed to the task
    failure_log: tuple[dict[str, Any], ...] = ()  # {t, particle, error} per failure

    @classmethod
    def start(cls, task_id: str, observation0: str, envs: Sequence[Environment],
              budget: int | None = None) -> Population:
        """N fresh particles at the initial observation, uniform weights (``budget``: steps)."""
        n = len(envs)
        return cls(
            histories=(History(task_id, observation0, budget=budget),) * n, envs=tuple(envs),
            log_w=LogWeights.uniform(n), f_last=(0.0,) * n, r_since=(0.0,) * n,
            finished=(False,) * n, failures=(None,) * n, pids=tuple(range(n)),
            lineages=((),) * n, next_pid=n,
        )

    @property
    def n(self) -> int:
        """Number of slots."""
        return len(self.envs)

    @property
    def live(self) -> list[int]:
        """Slots still stepping, in slot order."""
        return [i for i, done in enumerate(self.finished) if not done]

    def eligible(self, resample_terminated: bool) -> NDArray[np.bool_]:
        """Slots that take part in resampling: live ones (and finished ones if asked),
        never a failed one."""
        return np.array([(resample_terminated or not done) and fail is None
                         for done, fail in zip(self.finished, self.failures, strict=True)],
                        dtype=bool)

    def record(self, i: int, slot: int | None) -> TrajectoryRecord:
        """Slot i's trajectory at its current log-weight."""
        h = self.histories[i]
        return TrajectoryRecord(
            pid=self.pids[i], slot=slot, lineage=self.lineages[i], steps=h.steps,
            total_reward=h.total_reward, done=h.done,
            final_log_weight=float(self.log_w.log_w[i]), failure=self.failures[i],
        )


Outcome = tuple[int, AgentTurn, EnvStep | None]
"""What propagation returns per live slot: (slot, the prior's turn, the env's answer or None
when the prior failed)."""


def absorb(pop: Population, outcomes: Sequence[Outcome], t: int, beta: float) -> Population:
    """Apply one step's outcomes (in slot order): bill the turns, retire failures, extend
    histories and close the weights of particles that finished."""
    usage, failure_log = pop.usage, list(pop.failure_log)
    failed: list[tuple[int, str]] = []
    steps: list[tuple[int, Step]] = []
    for i, turn, res in outcomes:
        usage = usage + turn.usage
        if res is None:
            failed.append((i, str(turn.error)))
            failure_log.append({"t": t, "particle": i, "error": turn.error})
        else:
            steps.append((i, Step(turn.raw_text, turn.action, res.observation,
                                  float(res.reward), bool(res.done), turn.usage,
                                  dict(res.info))))
    pop = replace(pop, usage=usage, failure_log=tuple(failure_log))
    return apply_steps(retire_failed(pop, failed), steps, beta)


def retire_failed(pop: Population, failed: Sequence[tuple[int, str]]) -> Population:
    """Particles whose prior failed for good: finished, weight zero, archived as failures."""
    if not failed:
        return pop
    inc = np.zeros(pop.n)
    finished, failures = list(pop.finished), list(pop.failures)
    for i, error in failed:
        inc[i], finished[i], failures[i] = -np.inf, True, error
    out = replace(pop, log_w=pop.log_w.add(inc), finished=tuple(finished),
                  failures=tuple(failures))
    return replace(out, archive=(*pop.archive, *(out.record(i, None) for i, _ in failed)))


def apply_steps(pop: Population, steps: Sequence[tuple[int, Step]], beta: float
                ) -> Population:
    """Append each (slot, step); a step that ends the episode closes the particle's weight
    with f(terminal) = 0 and archives its trajectory."""
    histories, r_since = list(pop.histories), list(pop.r_since)
    f_last, finished = list(pop.f_last), list(pop.finished)
    inc, done = np.zeros(pop.n), []
    for i, step in steps:
        histories[i] = histories[i].extend(step)
        r_since[i] += step.reward
        if step.done:
            inc[i] = log_weight_increment(0.0, f_last[i], r_since[i], beta)
            f_last[i], r_since[i], finished[i] = 0.0, 0.0, True
            done.append(i)
    out = replace(pop, histories=tuple(histories), r_since=tuple(r_since),
                  f_last=tuple(f_last), finished=tuple(finished), log_w=pop.log_w.add(inc))
    return replace(out, archive=(*pop.archive, *(out.record(i, None) for i in done)))


def reweight(pop: Population, slots: Sequence[int], values: Sequence[float], beta: float
             ) -> Population:
    """Twist the weights of ``slots`` with their new values f(s_t) (finite, reward units)."""
    if len(slots) != len(values):
        raise ValueError(f"{len(values)} values for {len(slots)} particles")
    f_last, r_since = list(pop.f_last), list(pop.r_since)
    inc = np.zeros(pop.n)
    for i, f in zip(slots, values, strict=True):
        inc[i] = log_weight_increment(float(f), f_last[i], r_since[i], beta)
        f_last[i], r_since[i] = float(f), 0.0
    return replace(pop, f_last=tuple(f_last), r_since=tuple(r_since), log_w=pop.log_w.add(inc))


def horizon(pop: Population, beta: float) -> Population:
    """After the last step: every unfinished particle's weight is closed with f(s_T) = 0."""
    live = pop.live
    return reweight(pop, live, [0.0] * len(live), beta)


@dataclass(frozen=True)
class Resampled:
    """The outcome of one resampling: who descends from whom and the new log-weights."""

    ancestors: NDArray[np.int64]  # (N,) ancestor slot per new slot; ineligible slots: own
    log_w: LogWeights
    degenerate: bool  # every eligible weight was zero: ancestors drawn uniformly


def eligible_ess_fraction(log_w: LogWeights, eligible: NDArray[np.bool_]) -> float:
    """ESS of the eligible particles scaled to the population: ESS_elig * N / N_elig."""
    sub = LogWeights(log_w.log_w[eligible])
    return sub.ess() * log_w.n / sub.n


def resample(log_w: LogWeights, eligible: NDArray[np.bool_], scheme: Resampler,
             rng: np.random.Generator) -> Resampled:
    """Draw ancestors for the eligible slots among themselves; each offspring gets the
    eligible set's mean weight, so the total mass (and log Z) is preserved."""
    idx = np.flatnonzero(eligible)
    if idx.size == 0:
        raise ValueError("no particle is eligible for resampling")
    sub = LogWeights(log_w.log_w[idx])
    degenerate = sub.degenerate
    W = np.full(idx.size, 1.0 / idx.size) if degenerate else sub.normalised()
    ancestors = np.arange(log_w.n)
    ancestors[idx] = idx[scheme(W, idx.size, rng)]
    new = log_w.log_w.copy()
    new[idx] = sub.log_mean()
    return Resampled(ancestors, LogWeights(new), degenerate)


def offspring_plan(ancestors: Sequence[int]) -> list[tuple[int, bool]]:
    """Per new slot: (ancestor, whether it keeps the ancestor's environment). The first
    copy of an ancestor keeps it; every further copy needs a fork."""
    seen: set[int] = set()
    plan = []
    for a in ancestors:
        plan.append((int(a), a not in seen))
        seen.add(a)
    return plan


def reindex(pop: Population, res: Resampled, forks: Sequence[Environment]
            ) -> tuple[Population, list[Environment]]:
    """The offspring population (``forks`` in new-slot order, one per extra copy) and the
    environments nobody inherited (to close)."""
    fork_iter, next_pid = iter(forks), pop.next_pid
    envs, pids = [], []
    plan = offspring_plan(res.ancestors.tolist())
    for a, keep in plan:
        envs.append(pop.envs[a] if keep else next(fork_iter))
        pids.append(pop.pids[a] if keep else next_pid)
        next_pid += 0 if keep else 1
    anc = [a for a, _ in plan]
    new = replace(
        pop, envs=tuple(envs), pids=tuple(pids), next_pid=next_pid, log_w=res.log_w,
        histories=tuple(pop.histories[a] for a in anc), f_last=tuple(pop.f_last[a] for a in anc),
        r_since=tuple(pop.r_since[a] for a in anc), finished=tuple(pop.finished[a] for a in anc),
        failures=tuple(pop.failures[a] for a in anc),
        lineages=tuple((*pop.lineages[a], a) for a in anc),
    )
    kept = set(anc)
    return new, [e for i, e in enumerate(pop.envs) if i not in kept]
