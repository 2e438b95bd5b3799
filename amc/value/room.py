"""The room of a regime: how much a *perfect* value could gain over Best-of-N, from rollouts.

Before a value is tuned, ask whether any value could matter. With the prior's own rollouts of
a task (several groups of N), each group gives two numbers at a regime (horizon H, one
resampling step t, beta):

- **Best-of-N**: the group succeeds when any of its N rollouts succeeds within H steps.
- **A perfect resampler at step t**: every member's state at step t gets its chance of
  success p (below); members already successful make the group succeed, members finished
  unsuccessfully have p = 0; the N particles are redrawn multinomially with the weights of
  the exact twist of a binary reward, w = 1 + p (exp(1/beta) - 1), and each continues
  independently, so the group succeeds with probability ``1 - (sum_i w_i (1 - p_i) /
  sum_i w_i) ** N``. As beta -> 0 the weights go as p (the posterior conditions on success,
  it does not pick the best state); as beta grows, uniform resampling (Best-of-N again, in
  expectation). So this is the ceiling of AMC itself, not of an arbitrary selection rule.

The chance of success of a state comes from *other* rollouts: those of the same task outside
the group that reach the same observed state at step t (a key: the benchmark's observed
summary and t), with their success within H steps; a state no outside rollout reaches gets the
success rate of the outside rollouts still running at step t. Leaving the group out keeps the
resampler from knowing its own members' outcomes (which would make the room a tautology).

The room of a task is the mean over its groups of (perfect - Best-of-N), Best-of-N here computed
from the same chances, ``1 - prod(1 - p_i)``: leaving the group out biases a group's chances
down exactly when its own members succeeded (their successes leave the pool), so against the
*observed* Best-of-N the perfect resampler would look worse than no resampling (measured on the
kept Best-of-15 rollouts of the first LLM study: model 0.25, observed 0.31); the same bias on
both sides cancels. The observed Best-of-N is reported beside it. Tasks are the unit of the
paired test. Pure: rollouts in, numbers out (:func:`rollouts_from_histories` builds the
rollouts from histories with a key function).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from amc import stats
from amc.types import History


@dataclass(frozen=True)
class Rollout:
    """One prior rollout of a task, as the room needs it."""

    group: Hashable
    """The Best-of-N group it belongs to (e.g. (seed, index // N))."""
    keys: tuple[Hashable, ...]
    """keys[t]: the observed state after t steps, t = 0..steps."""
    success_at: int | None
    """The step at which it succeeded (None: never)."""

    @property
    def steps(self) -> int:
        return len(self.keys) - 1

    def succeeded(self, horizon: int) -> bool:
        return self.success_at is not None and self.success_at <= horizon

    def running_after(self, t: int) -> bool:
        """Still going after t steps (t below the collection's budget): an episode that ends
        earlier, successful or not, has fewer steps."""
        return self.steps > t and not self.succeeded(t)


def state_success(others: Sequence[Rollout], key: Hashable, t: int, horizon: int) -> float:
    """p(success within ``horizon`` | observed state ``key`` at step ``t``) from ``others``
    (the outside rollouts that reach it; else those still running after t; NaN: none)."""
    running = [r for r in others if r.running_after(t)]
    same = [r for r in running if r.keys[t] == key]
    pool = same or running
    return float(np.mean([r.succeeded(horizon) for r in pool])) if pool else math.nan


def member_chances(members: Sequence[Rollout], others: Sequence[Rollout], t: int,
                   horizon: int) -> np.ndarray:
    """Each member's chance at step t: 1 if it already succeeded, 0 if its episode ended
    without success, else :func:`state_success` (NaN when no outside rollout runs at t)."""
    p = np.empty(len(members))
    for i, m in enumerate(members):
        if m.succeeded(t):
            p[i] = 1.0
        elif not m.running_after(t):
            p[i] = 0.0
        else:
            p[i] = state_success(others, m.keys[t], t, horizon)
    return p


def perfect_resampler(p: np.ndarray, beta: float) -> float:
    """Success probability of N particles with chances ``p`` after one multinomial resampling
    with the binary reward's exact twist at ``beta`` (members with p = 1 have succeeded)."""
    if np.any(p >= 1.0):
        return 1.0
    w = 1.0 + p * math.expm1(1.0 / beta)
    q = float(np.sum(w * (1.0 - p)) / np.sum(w))
    return 1.0 - q ** len(p)


@dataclass(frozen=True)
class GroupRoom:
    """Best-of-N and the perfect resampler for one group."""

    group: Hashable
    best_of_n: float
    """Observed: 1 when any member succeeded within the horizon."""
    best_of_n_model: float
    """The same chances as the perfect resampler without resampling, 1 - prod(1 - p_i)."""
    perfect: float

    @property
    def room(self) -> float:
        """perfect - Best-of-N, both from the same chances (their leave-group-out bias, which
        lowers a group's chances exactly when its own members succeeded, cancels)."""
        return self.perfect - self.best_of_n_model


def task_room(rollouts: Sequence[Rollout], *, n: int, horizon: int, step: int,
              beta: float) -> list[GroupRoom]:
    """Each complete group of ``n`` rollouts of one task at the regime (horizon, step, beta)."""
    if not 0 < step < horizon:
        raise ValueError(f"the resampling step must be in (0, horizon): {step}, {horizon}")
    groups: dict[Hashable, list[Rollout]] = {}
    for r in rollouts:
        groups.setdefault(r.group, []).append(r)
    out = []
    for g, members in groups.items():
        if len(members) != n:
            continue
        others = [r for r in rollouts if r.group != g]
        p = member_chances(members, others, step, horizon)
        if np.any(np.isnan(p)):
            fill = np.nanmean(p) if np.any(~np.isnan(p)) else 0.0
            p = np.where(np.isnan(p), fill, p)
        bon = float(any(m.succeeded(horizon) for m in members))
        model = 1.0 - float(np.prod(1.0 - p))
        out.append(GroupRoom(g, bon, model, perfect_resampler(p, beta)))
    return out


def success_step(history: History, threshold: float) -> int | None:
    """The first step whose cumulative reward reaches ``threshold`` (None: never)."""
    total = 0.0
    for t, s in enumerate(history.steps, start=1):
        total += s.reward
        if total >= threshold:
            return t
    return None


def rollouts_from_histories(histories: Sequence[History], group_of: Sequence[Hashable],
                            key: Callable[[History], Hashable], *,
                            threshold: float = 1.0) -> list[Rollout]:
    """Rollouts of one task: keys[t] = ``key(history.prefix(t))`` with t appended."""
    return [Rollout(g, tuple((key(h.prefix(t)), t) for t in range(h.t + 1)),
                    success_step(h, threshold))
            for h, g in zip(histories, group_of, strict=True)]


def summarise_room(by_task: Mapping[str, Sequence[Rollout]], *, n: int, horizon: int,
                   step: int, beta: float) -> dict[str, float | int]:
    """The room of a regime over tasks: Best-of-N (observed and from the chances), the perfect
    resampler, and their paired difference over tasks (95% t interval, exact sign-flip p)."""
    perfect: dict[tuple[str, int], float] = {}
    model: dict[tuple[str, int], float] = {}
    observed: dict[tuple[str, int], float] = {}
    for task, rs in by_task.items():
        for i, g in enumerate(task_room(rs, n=n, horizon=horizon, step=step, beta=beta)):
            k = (task, i)
            perfect[k], model[k], observed[k] = g.perfect, g.best_of_n_model, g.best_of_n
    diff = stats.paired_difference(perfect, model)
    per_task = stats.task_means((k[0], perfect[k] - model[k]) for k in perfect)
    d = np.array(list(per_task.values()))
    return {"step": step, "horizon": horizon, "n": n, "beta": beta, "tasks": diff.tasks,
            "groups": diff.pairs,
            "best_of_n": stats.task_mean_se((k[0], v) for k, v in observed.items())[0],
            "best_of_n_model": stats.task_mean_se((k[0], v) for k, v in model.items())[0],
            "perfect": stats.task_mean_se((k[0], v) for k, v in perfect.items())[0],
            "room": diff.mean, "room_lo": diff.lo, "room_hi": diff.hi,
            "p": stats.sign_flip_p(d, exact_max=max(stats.EXACT_MAX, d.size))
            if d.size else math.nan}
