"""Evaluation metrics of a value model and its calibration (reliability) plot.

Regression metrics compare the predicted future reward f(s_t) with the Monte-Carlo target
y_t: MSE, MAE, Pearson, Spearman. Success metrics ask whether the implied total return
``reward_so_far + f(s_t)`` (the paper's V = f + r, clipped to [0, 1]) predicts that the
trajectory succeeds: ROC AUC (Mann-Whitney, ties averaged), the Brier score and the expected
calibration error (ECE, 10 equal-width bins). The reliability plot bins that clipped
prediction and shows the observed success frequency per bin.

``auc_within`` is the AUC over pairs of states of the same group only -- with groups
(task, step), the pairs resampling faces: particles of one task at one step. The plain AUC also
rewards ranking easy tasks above hard ones and early states above late ones, which no
resampling decision needs; a value can score well on it and still not steer.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import pearsonr, rankdata, spearmanr


def _corr(fn: object, a: np.ndarray, b: np.ndarray) -> float:
    if len(a) < 2 or np.std(a) == 0 or np.std(b) == 0:
        return float("nan")
    return float(fn(a, b)[0])  # type: ignore[operator]


def roc_auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Area under the ROC curve (NaN when only one class is present)."""
    labels = labels.astype(bool)
    n_pos, n_neg = int(labels.sum()), int((~labels).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    ranks = rankdata(scores)
    return float((ranks[labels].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def within_group_auc(scores: np.ndarray, labels: np.ndarray, groups: Sequence[Hashable]
                     ) -> float:
    """ROC AUC over (positive, negative) pairs in the same group only, ties counted one half.

    The pooled Mann-Whitney statistic: sum over groups of the concordant pairs, divided by the
    number of mixed pairs (NaN when no group holds both classes).
    """
    scores, labels = np.asarray(scores, float), np.asarray(labels, bool)
    if not (len(scores) == len(labels) == len(groups)):
        raise ValueError("within_group_auc needs scores, labels and groups of equal length")
    by_group: dict[Hashable, list[int]] = defaultdict(list)
    for i, g in enumerate(groups):
        by_group[g].append(i)
    num = den = 0.0
    for idx in by_group.values():
        y = labels[idx]
        n_pos, n_neg = int(y.sum()), len(idx) - int(y.sum())
        if n_pos and n_neg:
            ranks = rankdata(scores[idx])
            num += ranks[y].sum() - n_pos * (n_pos + 1) / 2
            den += n_pos * n_neg
    return float(num / den) if den else float("nan")


def calibration_error(p_success: np.ndarray, success: np.ndarray, bins: int = 10) -> float:
    """Expected calibration error: state-weighted mean |mean prediction - success rate| over
    equal-width bins of the predicted success probability in [0, 1] (NaN when empty)."""
    p, y = np.asarray(p_success, float), np.asarray(success, float)
    if not len(p):
        return float("nan")
    idx = np.clip(np.digitize(p, np.linspace(0, 1, bins + 1)[1:-1]), 0, bins - 1)
    err = sum(abs(p[idx == b].mean() - y[idx == b].mean()) * (idx == b).sum()
              for b in range(bins) if (idx == b).any())
    return float(err / len(p))


def _p_success(pred: np.ndarray, reward_so_far: np.ndarray) -> np.ndarray:
    """The implied total return reward_so_far + f(s), clipped to [0, 1]: a success score."""
    return np.clip(np.asarray(reward_so_far, float) + np.asarray(pred, float), 0.0, 1.0)


def value_metrics(pred: np.ndarray, target: np.ndarray, reward_so_far: np.ndarray,
                  success: np.ndarray, groups: Sequence[Hashable] | None = None
                  ) -> dict[str, float]:
    """All metrics of one evaluation (NaN where undefined, e.g. a constant prediction).

    ``groups`` (e.g. (task, step) per state) adds ``auc_within``."""
    pred, target = np.asarray(pred, float), np.asarray(target, float)
    p_success = _p_success(pred, reward_so_far)
    success = np.asarray(success, bool)
    out = {
        "mse": float(np.mean((pred - target) ** 2)) if len(pred) else float("nan"),
        "mae": float(np.mean(np.abs(pred - target))) if len(pred) else float("nan"),
        "pearson": _corr(pearsonr, pred, target),
        "spearman": _corr(spearmanr, pred, target),
        "auc": roc_auc(p_success, success),
        "brier": float(np.mean((p_success - success) ** 2)) if len(pred) else float("nan"),
        "ece": calibration_error(p_success, success),
    }
    if groups is not None:
        out["auc_within"] = within_group_auc(p_success, success, groups)
    return out


def auc_within_by_step(pred: np.ndarray, reward_so_far: np.ndarray, success: np.ndarray,
                       groups: Sequence[tuple[Any, Any]]) -> dict[str, float]:
    """``auc_within`` of the states at each step t separately ({"t": AUC}, NaN-free).

    ``groups``: (task, step) per state (:func:`state_groups`). The grouped AUC over all steps
    is dominated by late states, whose outcome is nearly settled; resampling acts early (e.g.
    after step 2), so the early steps' values are the ones that steer.
    """
    p = _p_success(pred, reward_so_far)
    y, steps = np.asarray(success, bool), np.array([g[1] for g in groups])
    out = {}
    for t in sorted(set(steps.tolist())):
        sel = np.flatnonzero(steps == t)
        auc = within_group_auc(p[sel], y[sel], [groups[int(i)][0] for i in sel])
        if math.isfinite(auc):
            out[str(t)] = auc
    return out


def state_groups(cols: dict[str, Any]) -> list[tuple[Any, Any]] | None:
    """(task, step) of every state of a split's columns (None when the columns lack them)."""
    if "task_id" not in cols or "step" not in cols:
        return None
    return list(zip(cols["task_id"], cols["step"], strict=True))


def finite(metrics: dict[str, float], prefix: str = "") -> dict[str, float]:
    """Only the finite metrics (MLflow and JSON do not like NaN), keys prefixed."""
    return {prefix + k: v for k, v in metrics.items() if math.isfinite(v)}


def reliability_plot(pred: np.ndarray, reward_so_far: np.ndarray, success: np.ndarray,
                     out: str | Path, bins: int = 10, title: str = "Value calibration") -> Path:
    """Reliability diagram (PNG) of clip(reward_so_far + pred) against success frequency."""
    from amc.plots import pyplot, save_png

    plt = pyplot()
    p = np.clip(np.asarray(reward_so_far, float) + np.asarray(pred, float), 0.0, 1.0)
    y = np.asarray(success, float)
    edges = np.linspace(0, 1, bins + 1)
    idx = np.clip(np.digitize(p, edges[1:-1]), 0, bins - 1)
    centers, freq, counts = [], [], []
    for b in range(bins):
        sel = idx == b
        counts.append(int(sel.sum()))
        if sel.any():
            centers.append(float(p[sel].mean()))
            freq.append(float(y[sel].mean()))
    fig, (ax, axh) = plt.subplots(2, 1, figsize=(5, 6), height_ratios=[3, 1], sharex=True)
    ax.plot([0, 1], [0, 1], "--", color="grey", label="perfect")
    ax.plot(centers, freq, "o-", label="model")
    ax.set_ylabel("observed success frequency")
    ax.set_title(title)
    ax.legend(loc="upper left")
    axh.bar((edges[:-1] + edges[1:]) / 2, counts, width=1 / bins, edgecolor="black")
    axh.set_xlabel("predicted total return (clipped to [0, 1])")
    axh.set_ylabel("states")
    return save_png(fig, out, dpi=100)
