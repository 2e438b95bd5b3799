"""The declared offline figures of a value on the fixed held-out set, and the choice rule.

For a candidate's values ``V`` (``f + r``; r = 0 at every non-terminal state of a binary
reward) on the held-out states, at each resampling step k of the regime:

- ``auc_within``: the within-(task, step) AUC of ``clip(V, 0, 1)`` against success within
  the horizon (siblings: one task's states at step k, pooled over seeds), with a 95%
  task-cluster bootstrap interval (tasks resampled with replacement, the AUC recomputed from
  their concordant and mixed pairs: :func:`studies.value_options.measure.bootstrap`) and the
  paired difference to a reference candidate on the same resampled tasks;
- ``spread``: the mean within-group sd of V over the (task, k) groups, and over the N
  particles of a run (``spread_run``), each over beta, and the weight ratio
  ``exp(spread / beta)`` they give (near 1: resampling is nearly uniform);
- ``log_loss_beta`` / ``log_loss_fitted`` / ``log_loss_uniform``: the within-group
  cross-entropy of which sibling succeeds at beta, at the candidate's fitted T, and uniform;
- ``doomed_weight``: mean over groups holding both of mean p(doomed) / mean p(live)
  (:func:`amc.value.offline.doomed_weight`): the weight a state the planner can no longer
  finish in the steps left keeps beside its live siblings (0 for a value that knows).

:func:`choose` applies the declared rule (``protocol.json``'s ``rule``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from amc.value.metrics import within_group_auc
from amc.value.offline import doomed_weight
from studies.value_options.measure import bootstrap, task_counts
from studies.value_options.sibling_metrics import sibling_metrics, within_spread

TIE = 0.01
"""Lower bounds closer than this to the best count as tied (the cheaper option wins)."""


def within_auc_of(v: np.ndarray, t: Any) -> float:
    """Within-(task, step) AUC of ``clip(v, 0, 1)`` on a table's states (its groups)."""
    return within_group_auc(np.clip(np.asarray(v, float), 0.0, 1.0), t.success, t.groups)


def step_figures(v: np.ndarray, held: Any, doomed: np.ndarray, steps: tuple[int, ...],
                 beta: float, temperature: float | None) -> dict[str, dict[str, float]]:
    """The figures above (not the bootstrap) per resampling step, keyed ``step<k>``."""
    v = np.asarray(v, float)
    sib = sibling_metrics(v, np.zeros_like(v), held.success, held.groups, steps, beta,
                          temperature)
    p = np.clip(v, 0.0, 1.0)
    out = {}
    for k in steps:
        sel = np.flatnonzero(np.array([g[1] == k for g in held.groups]))
        runs = [held.runs[i] for i in sel]
        spread_run = within_spread(v[sel], runs)
        d = doomed[sel]
        fig = {name: sib[f"{name}_step{k}"] for name in
               ("auc_within", "spread", "spread_over_beta", "weight_ratio", "log_loss_beta",
                "log_loss_uniform", "mixed_groups")}
        if temperature is not None:
            fig["log_loss_fitted"] = sib[f"log_loss_fitted_step{k}"]
            fig["weight_ratio_fitted"] = (math.exp(fig["spread"] / temperature)
                                          if math.isfinite(fig["spread"]) else math.nan)
        fig.update({"states": float(len(sel)),
                    "spread_run": spread_run, "spread_run_over_beta": spread_run / beta,
                    "doomed_states": float(d.sum()),
                    "doomed_weight": doomed_weight(p[sel], d, [held.groups[i] for i in sel]),
                    "doomed_mean": float(p[sel][d].mean()) if d.any() else math.nan})
        out[f"step{k}"] = fig
    return out


def intervals(scores: dict[str, np.ndarray], held: Any, steps: tuple[int, ...], base: str
              ) -> dict[str, dict[str, dict[str, float]]]:
    """Per step, per candidate: the within AUC with its task-cluster bootstrap interval and
    the paired difference to ``base`` (seeded by the step: every candidate sees the same
    resampled tasks)."""
    out = {}
    for k in steps:
        counts = {name: task_counts(np.clip(s, 0, 1), held.success, held.groups, k)
                  for name, s in scores.items()}
        if not counts[base]:
            out[f"step{k}"] = {name: {"auc": math.nan, "lo": math.nan, "hi": math.nan,
                                      "tasks": 0.0} for name in scores}
            continue
        out[f"step{k}"] = bootstrap(counts, base, seed=k)
    return out


def choose(boot: dict[str, dict[str, float]], cost: dict[str, float],
           order: list[str]) -> dict[str, Any]:
    """The declared rule at the first resampling step: the largest bootstrap lower bound of
    the within AUC; candidates within :data:`TIE` of it are tied and the cheapest wins (CPU
    seconds per scored state, measured), then the larger point AUC, then the declared
    ``order``. Candidates whose interval is undefined (no mixed group) are never chosen."""
    ok = [c for c in order if c in boot and math.isfinite(boot[c]["lo"])]
    if not ok:
        return {"chosen": None, "tied": [], "reason": "no candidate has a defined interval "
                "(no held-out task has a success and a failure at the first resampling step)"}
    top = max(boot[c]["lo"] for c in ok)
    tied = [c for c in ok if boot[c]["lo"] >= top - TIE]
    pick = min(tied, key=lambda c: (cost[c], -boot[c]["auc"], order.index(c)))
    return {"chosen": pick, "tied": tied, "best_lower_bound": top,
            "above_chance": boot[pick]["lo"] > 0.5,
            "reason": f"largest lower bound {top:.3f}; tied within {TIE}: {', '.join(tied)}; "
                      f"cheapest of them: {pick}"}
