"""Offline figures of a value on held-out states that may predict how well it steers SMC.

Ranking is not the whole story: a learned value can rank states within a (task, step) almost
as well as the Monte-Carlo ceiling and still steer far worse, because at small beta the SMC
weights go as p(s) and a doomed state scored low-but-not-zero keeps its particle alive. So
beside the within-(task, step) AUC this module measures the low end:

- ``auc_within``: ROC AUC of p against the state's eventual success over pairs of states of
  the same task at the same step (the comparison resampling makes);
- ``log_loss``: mean negative log-likelihood of the binary outcome (clipped at 1e-6);
- ``small_p_rate`` / ``small_p_mean`` / ``small_p_ratio``: among states scored below
  ``small`` (0.2), the observed success rate, the mean score, and their ratio (1 = calibrated
  at the low end; > 1 scores too high where it matters);
- ``doomed_mean`` and ``doomed_weight``: the mean score of doomed states (success impossible
  in the steps left, a mask the caller derives, e.g. from a planner), and its ratio to the
  mean score of the live states at the same (task, step) -- the weight a doomed particle keeps
  beside a live one at small beta (0 for a value that knows the state is lost).

:func:`predictiveness` ranks these figures by how well they predict a sweep's gain across value
variants (Spearman correlation); :func:`spearman_exact` gives one figure's correlation with its
exact permutation p (a handful of variants: with n = 3, |rho| = 1 still has p = 1/3). Pure
numpy/scipy.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np
from scipy.stats import rankdata, spearmanr

from amc.value.calibration import log_loss
from amc.value.metrics import within_group_auc

SMALL = 0.2
FIGURES = ("auc_within", "log_loss", "small_p_ratio", "doomed_mean", "doomed_weight")
"""The figures :func:`offline_figures` returns (and :func:`predictiveness` ranks)."""
HIGHER_IS_BETTER = {"auc_within": True, "log_loss": False, "small_p_ratio": False,
                    "doomed_mean": False, "doomed_weight": False}
"""The direction of each figure (small_p_ratio: closer to 1 is better; > 1 is the failure)."""


def doomed_weight(p: np.ndarray, doomed: np.ndarray, groups: Sequence[Hashable]) -> float:
    """Mean over (task, step) groups holding both kinds of the ratio mean p(doomed) / mean
    p(live) (NaN when no group holds both, or live states are all scored 0)."""
    by: dict[Hashable, list[int]] = defaultdict(list)
    for i, g in enumerate(groups):
        by[g].append(i)
    ratios = []
    for idx in by.values():
        d = doomed[idx]
        live = p[idx][~d]
        if d.any() and (~d).any() and live.mean() > 0:
            ratios.append(p[idx][d].mean() / live.mean())
    return float(np.mean(ratios)) if ratios else float("nan")


def offline_figures(p: Any, success: Any, groups: Sequence[Hashable], doomed: Any = None,
                    small: float = SMALL) -> dict[str, float]:
    """The figures of the module docstring for predictions ``p`` of binary outcomes."""
    pv = np.clip(np.asarray(p, float), 0.0, 1.0)
    y = np.asarray(success, bool)
    if not (pv.shape == y.shape and len(groups) == pv.size) or not pv.size:
        raise ValueError("offline_figures needs p, success and groups of one non-zero length")
    low = pv < small
    out = {"states": float(pv.size), "auc_within": within_group_auc(pv, y, groups),
           "log_loss": log_loss(pv, y), "small_p_states": float(low.sum()),
           "small_p_mean": float(pv[low].mean()) if low.any() else float("nan"),
           "small_p_rate": float(y[low].mean()) if low.any() else float("nan")}
    rate = out["small_p_rate"]
    out["small_p_ratio"] = (out["small_p_mean"] / rate if rate > 0
                            else float("inf") if out["small_p_mean"] > 0 else float("nan"))
    if doomed is not None:
        d = np.asarray(doomed, bool)
        if d.shape != pv.shape:
            raise ValueError("doomed must have one entry per state")
        if (d & y).any():
            raise ValueError("a state marked doomed succeeded: the mask is wrong")
        out["doomed_states"] = float(d.sum())
        out["doomed_mean"] = float(pv[d].mean()) if d.any() else float("nan")
        out["doomed_weight"] = doomed_weight(pv, d, groups)
    return out


def figures_from_json(d: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`offline_figures`' record as it returned it, from strict JSON (every non-finite
    figure written null): null reads NaN, except ``small_p_ratio``, which was +inf where the
    low states' success rate is 0 and their mean score is above 0 (its definition)."""
    out = {k: math.nan if v is None else v for k, v in d.items()}
    if d.get("small_p_ratio", 0) is None and out.get("small_p_rate") == 0 \
            and out.get("small_p_mean", 0) > 0:
        out["small_p_ratio"] = math.inf
    return out


def predictiveness(figures: Mapping[str, Mapping[str, float]], gain: Mapping[str, float]
                   ) -> dict[str, float]:
    """Spearman correlation across variants between each figure (signed so that larger is
    better) and the variant's sweep gain; NaN where fewer than 3 variants have both."""
    out = {}
    for f in FIGURES:
        names = [v for v in gain if v in figures and np.isfinite(figures[v].get(f, np.nan))]
        if len(names) < 3:
            out[f] = float("nan")
            continue
        sign = 1.0 if HIGHER_IS_BETTER[f] else -1.0
        x = [sign * figures[v][f] for v in names]
        rho = spearmanr(x, [gain[v] for v in names])[0]
        out[f] = float(rho)
    return out


EXACT_MAX = 8
"""Up to this many points :func:`spearman_exact` enumerates every permutation (8! = 40320)."""


def _rho(rx: np.ndarray, ry: np.ndarray) -> np.ndarray:
    """Pearson correlation of rank vector ``rx`` with each row of ``ry`` (NaN at sd 0)."""
    x = rx - rx.mean()
    y = ry - ry.mean(axis=-1, keepdims=True)
    den = np.sqrt((x * x).sum() * (y * y).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (y * x).sum(axis=-1) / np.where(den > 0, den, 1.0), np.nan)


def spearman_exact(x: Sequence[float], y: Sequence[float], seed: int = 0,
                   resamples: int = 20_000) -> tuple[float, float]:
    """(Spearman rho, two-sided permutation p) of paired points (ties: mid-ranks; inf ranks
    last). p is the share of permutations of ``y`` with |rho| at least the observed one:
    exact up to :data:`EXACT_MAX` points, else (hits + 1) / (``resamples`` + 1) over seeded
    random permutations. NaN
    below 3 points or when either side is constant."""
    xv, yv = np.asarray(x, float), np.asarray(y, float)
    if xv.shape != yv.shape or xv.ndim != 1:
        raise ValueError("spearman_exact needs two 1-d sequences of one length")
    if xv.size < 3 or np.isnan(xv).any() or np.isnan(yv).any():
        return float("nan"), float("nan")
    rx, ry = rankdata(xv), rankdata(yv)
    rho = float(_rho(rx, ry[None, :])[0])
    if not np.isfinite(rho):
        return float("nan"), float("nan")
    if xv.size <= EXACT_MAX:
        hits = np.abs(_rho(rx, np.array(list(itertools.permutations(ry))))) >= abs(rho) - 1e-12
        return rho, float(hits.mean())
    rng = np.random.default_rng(seed)
    perms = np.array([rng.permutation(ry) for _ in range(resamples)])
    hits = np.abs(_rho(rx, perms)) >= abs(rho) - 1e-12
    return rho, float((hits.sum() + 1) / (resamples + 1))
