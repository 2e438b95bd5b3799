"""The promotion gate's inputs beside its primary test: the frozen set, the guard measurements
and the offline guard (:mod:`amc.pipeline.promote` decides with them).

**The frozen evaluation set** (:func:`eval_set`, :func:`check_frozen`): the gate tests only on the
set it froze first, and counts the decisions tested on it (the reuse rule of
:mod:`amc.pipeline.gate_stats` spends the level over that count).

**Guard measurements** (:func:`measure_guards`), per role (challenger, champion): tokens per task
and success of ``smc@N+role``, its gain over ``bon@N``, the value's calibration on the
evaluation's prior rollouts (:mod:`amc.pipeline.calibration`) and, with ``promote.offline_guard``
set, the offline figures of the value on the same held-out states.

**The offline guard** (:func:`offline_check`): issue 30 asks which offline figure of a value
predicts how well it steers SMC (:mod:`amc.value.offline`; the evidence: docs/evidence.md,
"Value methods"). The gate uses the figure chosen in ``promote.offline_guard``
(:class:`amc.pipeline.promote_params.OfflineGuard`) as a guard: the challenger is vetoed when
its figure is worse than the champion's by more than ``max_worse``.

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

import hashlib
import json
import math
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from amc.pipeline.calibration import model_calibration, model_scores, prior_states
from amc.pipeline.params import PipelineParams
from amc.pipeline.promote_params import OfflineGuard
from amc.results import write_json_atomic
from amc.smc.records import TaskResult
from amc.stats import paired_difference
from amc.types import History
from amc.value.offline import HIGHER_IS_BETTER, offline_figures


def eval_set(env: str, split: str, tasks: list[str], seeds: list[int]) -> dict[str, Any]:
    """The evaluation set as a record, with a digest that identifies it."""
    body = {"env": env, "split": split, "tasks": [str(t) for t in tasks],
            "seeds": [int(s) for s in seeds]}
    digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]
    return {**body, "digest": digest}


def check_frozen(path: Path, current: dict[str, Any]) -> str | None:
    """Freeze ``current`` when nothing is frozen yet; the refusal reason when it differs."""
    if not path.is_file():
        write_json_atomic(path, {**current, "frozen_at": time.strftime(
            "%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
        return None
    frozen = json.loads(path.read_text())
    if frozen.get("digest") != current["digest"]:
        return (f"evaluation set {current['digest']} ({len(current['tasks'])} tasks, seeds "
                f"{current['seeds']}) is not the frozen set {frozen.get('digest')} of {path}")
    return None


def frozen_decisions(path: Path) -> int:
    """How many decisions have been tested on the frozen set of ``path`` (0 when none)."""
    if not path.is_file():
        return 0
    return int(json.loads(path.read_text()).get("decisions", 0))


def count_decision(path: Path) -> None:
    """Record one more tested decision in the frozen set's file."""
    if path.is_file():
        frozen = json.loads(path.read_text())
        write_json_atomic(path, {**frozen, "decisions": int(frozen.get("decisions", 0)) + 1})


def measure_guards(p: PipelineParams, eval_json: dict[str, Any],
                   results: dict[str, list[TaskResult]]) -> dict[str, dict[str, Any]]:
    """Tokens per task, calibration error and (offline guard on) offline figures of each
    evaluated model (the guards' inputs).

    Calibration and figures are measured on the evaluation's prior rollouts (react/bon
    trajectories: the prior's own distribution, not one tilted by either model); the doomed
    mask only when the guard's figure needs it (it replays the planner from every state)."""
    n = p.promote.n or max(eval_json.get("n_grid") or [0])
    methods = eval_json.get("methods") or {}
    priors = [s for s, m in methods.items() if m.get("role") in ("bon", "react")]
    pairs = prior_states(results, priors, p.promote.calibration_states, 0)
    bon = (methods.get(f"bon@{n}") or {}).get("success")
    out: dict[str, dict[str, Any]] = {}
    g = p.promote.offline_guard
    states = [] if g is None else labelled_states(results, priors, p.promote.calibration_states,
                                                  0, p.smc.success_threshold)
    mask, note = (doomed_mask(p.env.name, p.env.options, states, p.smc.success_threshold)
                  if g is not None and g.figure.startswith("doomed") and states
                  else (None, "" if states else "no held-out prior states"))
    for role in ("challenger", "champion"):
        m = (eval_json.get("models") or {}).get(role)
        spec = methods.get(f"smc@{n}+{role}")
        if not m or spec is None:
            continue
        mine = spec.get("success")
        out[role] = {"tokens_per_task": spec.get("tokens_per_task"), "success": mine,
                     "gain": None if mine is None or bon is None else mine - bon,
                     **success_ses(results, f"smc@{n}+{role}", f"bon@{n}"),
                     **model_calibration(p, m["uri"], pairs),
                     "calibration_states": len(pairs)}
        if g is not None:
            scores = model_scores(p, m["uri"], [h for h, _ in states])
            out[role]["offline"] = figures(scores, states, mask)
            out[role]["offline_note"] = note
    return out


def by_pair(results: dict[str, list[Any]], spec: str) -> dict[tuple[str, int], float]:
    """Success of one method spec per (task, seed) (``results`` keyed ``spec#seed``)."""
    return {(str(r.task_id), int(r.seed)): float(r.metrics["success"])
            for key, rs in results.items() if key.startswith(spec + "#") for r in rs}


def success_ses(results: dict[str, list[Any]], spec: str, bon_spec: str
                ) -> dict[str, float | None]:
    """Standard errors of ``spec``'s success and of its gain over ``bon_spec`` (averaged
    within task, over tasks: :func:`amc.stats.paired_difference`), what the drift monitor
    weighs a later fall against (None: fewer than two tasks)."""
    mine, bon = by_pair(results, spec), by_pair(results, bon_spec)

    def se(a: dict[tuple[str, int], float], b: dict[tuple[str, int], float]) -> float | None:
        x = paired_difference(a, b).se if set(a) & set(b) else math.nan
        return None if not math.isfinite(x) else float(x)

    return {"success_se": se(mine, dict.fromkeys(mine, 0.0)), "gain_se": se(mine, bon)}


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
