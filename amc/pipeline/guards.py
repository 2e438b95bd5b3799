"""The promotion gate's guard measurements: what each evaluated model is checked on besides
the primary metric (:mod:`amc.pipeline.promote` decides with them).

Per role (challenger, champion): tokens per task and success of ``smc@N+role``, its gain over
``bon@N``, the value's calibration on the evaluation's prior rollouts
(:mod:`amc.pipeline.calibration`) and, with ``promote.offline_guard`` set, the offline figures
of the value on the same held-out states (:mod:`amc.pipeline.offline_guard`).
"""

from __future__ import annotations

import math
from typing import Any

from amc.pipeline.calibration import model_calibration, model_scores, prior_states
from amc.pipeline.offline_guard import doomed_mask, figures, labelled_states
from amc.pipeline.params import PipelineParams
from amc.smc.records import TaskResult
from amc.stats import paired_difference


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
