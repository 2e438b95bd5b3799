"""Selections where the reward is hidden, and what each loses against the oracle. Pure.

On WebShop the score is computed from the goal's hidden annotation after the purchase, and
every finished episode ends with one, so a deployed agent cannot tell a good purchase from a
bad one; the oracle best-of-pool (``oracle_best``) is then not what it gets. Three selections
read no reward:

- **deployable** (``deployable_reward``, written by the driver): the pool trajectory a
  selection value scores highest at its reward-free last pre-terminal state
  (:func:`amc.smc.scoring.selection_history`); NaN without a selection value;
- **max-weight, rewards masked** (``max_weight_masked_reward``): the final-population
  particle with the largest final log-weight once the rewards it collected since its last
  resampling are taken out, log w - R_since / beta (the rewards before it were reset by that
  resampling). For Best-of-N every masked weight is 0: the first particle, a uniform draw. For
  AMC the particles of the last segment share the anchor's weight, and what is left is
  -f(s_anchor) / beta: the selection prefers the particle whose value was *lowest* at the last
  resampling -- the weights correct for having been chosen for their value, so without the
  reward they point away from it (measured, not assumed: see the selection-loss table);
- **most likely trajectory** (``mode_reward``): the action sequence carrying the most
  normalised masked weight in the final population (identical sequences pooled; the first on
  ties). For Best-of-N it is the most frequent trajectory (a majority vote).

The selection loss of a rule is ``oracle_best`` minus the selected reward (>= 0 per task).

**TextCraft: success is observable.** A TextCraft episode ends exactly when the goal item is
crafted (or the budget runs out), so finished = success and a rule "pick any trajectory that
terminated" equals the oracle: there ``oracle_best`` *is* what a deployed agent gets, the
selection loss of that rule is 0 by construction, and the deployable selection only measures
whether the value ranks a finished trajectory's pre-terminal state above an unfinished one's
last state. The selection question is real only where the reward is hidden (WebShop).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from amc.smc.weights import LogWeights
from amc.stats import t_quantile, task_mean_se
from studies.sweeps.signflip import paired_sign_flip
from studies.sweeps.stats import paired

HIDDEN = ("deployable_reward", "max_weight_masked_reward", "mode_reward")
"""Reward-free selections of a row's metrics (deployable is NaN without a selection value)."""
LABEL = {"deployable_reward": "deployable (value-selected)",
         "max_weight_masked_reward": "max-weight, rewards masked",
         "mode_reward": "most likely trajectory"}


def anchor(n_steps: int, resample_steps: Sequence[int]) -> int:
    """Steps before the particle's last resampling: the largest resampling step t < n_steps
    (a particle with more than t steps was live at step t and resampled); 0 if none."""
    return max((t for t in resample_steps if t < n_steps), default=0)


def masked_log_weights(log_w: Sequence[float], rewards: Sequence[Sequence[float]],
                       resample_steps: Sequence[int], beta: float) -> np.ndarray:
    """Final log-weights with each particle's rewards since its last resampling removed.

    ``rewards[j]``: particle j's per-step rewards (its whole trajectory, forced steps too).
    """
    if len(log_w) != len(rewards):
        raise ValueError(f"{len(log_w)} log-weights for {len(rewards)} trajectories")
    out = np.asarray(log_w, dtype=np.float64).copy()
    for j, r in enumerate(rewards):
        out[j] -= float(np.sum(r[anchor(len(r), resample_steps):])) / beta
    return out


def mode_index(keys: Sequence[Any], log_w: Sequence[float] | np.ndarray) -> int:
    """Index of the first member of the key with the most normalised weight (first on ties)."""
    if not len(keys):
        raise ValueError("no trajectories to select from")
    w = LogWeights(np.asarray(log_w, dtype=np.float64)).normalised()
    mass: dict[Any, float] = {}
    first: dict[Any, int] = {}
    for i, k in enumerate(keys):
        mass[k] = mass.get(k, 0.0) + float(w[i])
        first.setdefault(k, i)
    best = max(mass.values())
    return min(first[k] for k, m in mass.items() if m >= best - 1e-12)


def hidden_metrics(result: Any, beta: float) -> dict[str, float]:
    """``max_weight_masked_reward`` and ``mode_reward`` of one task result (NaN if empty).

    ``result``: a :class:`~amc.smc.records.TaskResult`; failed particles are left out, as the
    driver's own scores leave them out.
    """
    pop = [r for r in result.population if r.failure is None]
    if not pop:
        return {"max_weight_masked_reward": math.nan, "mode_reward": math.nan}
    resampled = [s.t for s in result.steps if s.resampled]
    masked = masked_log_weights([r.final_log_weight for r in pop],
                                [[s.reward for s in r.steps] for r in pop], resampled, beta)
    keys = [tuple(s.action for s in r.steps) for r in pop]
    return {"max_weight_masked_reward": float(pop[int(np.argmax(masked))].total_reward),
            "mode_reward": float(pop[mode_index(keys, masked)].total_reward)}


def losses(rows: Sequence[dict[str, Any]], method: str, metric: str) -> list[float] | None:
    """Per-row oracle - selected of one method (None when a row lacks the metric or has NaN)."""
    out = []
    for r in rows:
        m = r[method]["metrics"]
        if metric not in m or not math.isfinite(m[metric]):
            return None
        out.append(float(m["oracle_best"]) - float(m[metric]))
    return out


def loss_interval(tasks: Sequence[str], x: Sequence[float]) -> tuple[float, float, float]:
    """(mean, 95% lo, 95% hi) of a per-row loss, seeds averaged within a task first."""
    mean, se = task_mean_se(zip(tasks, map(float, x), strict=True))
    n = len(set(tasks))
    half = t_quantile(0.975, n - 1) * se if n > 1 and math.isfinite(se) else math.nan
    return mean, mean - half, mean + half


def selection_summary(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per reward-free selection measured in every row: each method's selected reward and
    selection loss (mean and 95% interval over tasks) and AMC - Best-of-N on the selected
    reward (paired, interval over tasks, sign-flip p)."""
    tasks = [r["task_id"] for r in rows]
    out = []
    for metric in HIDDEN:
        lb, la = losses(rows, "bon", metric), losses(rows, "amc", metric)
        if not rows or lb is None or la is None:
            continue
        sel = {k: [r[k]["metrics"][metric] for r in rows] for k in ("bon", "amc")}
        d = paired(tasks, sel["bon"], sel["amc"])
        out.append({"selection": metric, "bon": d.a, "amc": d.b,
                    "loss_bon": loss_interval(tasks, lb), "loss_amc": loss_interval(tasks, la),
                    "diff": (d.d.mean, d.d.lo, d.d.hi),
                    "p": paired_sign_flip(tasks, sel["bon"], sel["amc"])})
    return out
