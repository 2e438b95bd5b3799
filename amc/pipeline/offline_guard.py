"""The promotion gate's offline guard: a value figure on held-out states, challenger vs champion.

Issue 30 asks which offline figure of a value predicts how well it steers SMC
(:mod:`amc.value.offline`; the evidence: docs/evidence.md, "Value methods"). The gate uses the
figure chosen in ``promote.offline_guard`` (:class:`amc.pipeline.promote_params.OfflineGuard`)
as a guard: the challenger is vetoed when its figure is worse than the champion's by more than
``max_worse``.

Held-out states: the evaluation's prior rollouts (react / Best-of-N trajectories on the
evaluation split: tasks neither value was trained on, the prior's own distribution, the same
seeded subsample of ``promote.calibration_states`` states as the calibration guard), each
labelled with the eventual success of its trajectory (total reward >= ``smc.success_threshold``)
and grouped by (task, step). Both models score the same states.

Doomed states (``doomed_mean``, ``doomed_weight``): the benchmark's planner
(:class:`amc.envs.benchmark.PlannerHooks`), replayed from the state, needs more steps than the
budget leaves. Only a benchmark whose planner replays an environment (TextCraft) gives the
mask; elsewhere -- or when the planner does not finish -- a state is not marked, and with no
mask at all the doomed figures are not computed and the guard says so (never a silent pass).
States marked doomed that nevertheless succeeded (another route than the planner's) are
counted and left out of the mask, as in the simulation sweeps' offline figures.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from amc.pipeline.promote_params import OfflineGuard
from amc.smc.records import TaskResult
from amc.types import History
from amc.value.offline import HIGHER_IS_BETTER, offline_figures

PLAN_LIMIT = 200
"""Planner steps tried from one state before it counts as not finishing (not doomed)."""


def labelled_states(results: Mapping[str, list[TaskResult]], specs: list[str], limit: int,
                    seed: int, threshold: float) -> list[tuple[History, bool]]:
    """(prefix history, eventual success of its trajectory) of the trajectories of ``specs``:
    the states and seeded subsample of :func:`amc.pipeline.calibration.prior_states`."""
    states = []
    for key in sorted(results):
        if key.split("#")[0] not in specs:
            continue
        for r in results[key]:
            for tr in r.trajectories:
                won = float(tr.total_reward) >= threshold
                for k in range(len(tr.steps)):
                    states.append((History(r.task_id, r.observation0, tr.steps[:k],
                                           budget=r.budget), won))
    if len(states) > limit:
        idx = np.random.default_rng(seed).choice(len(states), size=limit, replace=False)
        states = [states[i] for i in sorted(idx)]
    return states


def planner_steps(suite: Any, hooks: Any, h: History, threshold: float,
                  limit: int = PLAN_LIMIT) -> int | None:
    """Steps the planner takes from ``h``'s state to success (None: it stops, ends the
    episode short of success, or exceeds ``limit``)."""
    env = suite.make()
    try:
        env.reset(h.task_id)
        total = 0.0
        for a in h.actions:
            total += env.step(a).reward
        for n in range(limit + 1):
            if total >= threshold:
                return n
            a = hooks.next_action(env)
            if a is None:
                return None
            st = env.step(hooks.to_menu(env, a) if hooks.to_menu else a)
            total += st.reward
            if st.done and total < threshold:
                return None
        return None
    finally:
        env.close()


def doomed_mask(env_name: str, env_options: Mapping[str, Any] | None,
                states: list[tuple[History, bool]], threshold: float
                ) -> tuple[np.ndarray | None, str]:
    """(doomed & not succeeded per state, or None; a note: why none, or how many succeeded
    although marked)."""
    from amc.envs.benchmarks import benchmark_in
    from amc.registry import ENVIRONMENTS

    bench = benchmark_in(env_name)
    if bench.planner is None:
        return None, f"{env_name} has no planner for a doomed-state mask"
    hooks = bench.planner()
    if not hooks.replay:
        return None, f"{env_name}'s planner does not replay an environment: no doomed mask"
    suite = ENVIRONMENTS.build(env_name, env_options)
    doomed = np.zeros(len(states), bool)
    for i, (h, _) in enumerate(states):
        left = h.steps_left
        if left is not None and not h.done:
            n = planner_steps(suite, hooks, h, threshold)
            doomed[i] = n is not None and n > left
    won = np.array([y for _, y in states], bool)
    return doomed & ~won, f"{int((doomed & won).sum())} marked doomed but succeeded"


def figures(scores: list[float], states: list[tuple[History, bool]],
            mask: np.ndarray | None) -> dict[str, float] | None:
    """:func:`amc.value.offline.offline_figures` of ``scores`` (None without states)."""
    if not states:
        return None
    groups = [(h.task_id, h.t) for h, _ in states]
    return offline_figures(scores, [y for _, y in states], groups, mask)


def _value(figs: Mapping[str, Any] | None, figure: str) -> float | None:
    v = (figs or {}).get(figure)
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)


def worse_by(figure: str, challenger: float, champion: float) -> float:
    """How much worse the challenger's figure is (> 0: worse; its direction per figure)."""
    if challenger == champion:  # also inf == inf (both score lost states, none win)
        return 0.0
    return champion - challenger if HIGHER_IS_BETTER[figure] else challenger - champion


def offline_check(guard: OfflineGuard | None, challenger: Mapping[str, Any] | None,
                  champion: Mapping[str, Any] | None, why_missing: str = "") -> dict[str, Any]:
    """The guard's record: figure, both values, ``worse_by``, ``status`` (off | passed |
    vetoed | not computed) and ``veto`` (the veto's reason, or None)."""
    if guard is None:
        return {"status": "off", "veto": None}
    f = guard.figure
    mine, theirs = _value(challenger, f), _value(champion, f)
    out: dict[str, Any] = {"figure": f, "max_worse": guard.max_worse, "challenger": mine,
                           "champion": theirs, "worse_by": None, "missing": guard.missing}
    if mine is None or theirs is None:
        who = [r for r, v in (("challenger", mine), ("champion", theirs)) if v is None]
        text = (f"offline guard ({f}) not computed for the {' and '.join(who)}"
                + (f": {why_missing}" if why_missing else ""))
        veto = text if guard.missing == "veto" else None
        return {**out, "status": "not computed", "note": text, "veto": veto}
    d = worse_by(f, mine, theirs)
    out["worse_by"] = d
    if d > guard.max_worse:
        return {**out, "status": "vetoed", "veto": (
            f"offline {f} {mine:.4g} is worse than the champion's {theirs:.4g} by "
            f"{d:.4g} > {guard.max_worse:g}")}
    return {**out, "status": "passed", "veto": None}
