"""Pure statistics of the promotion gate and the drift monitor (no I/O, no registry).

Gate. The challenger and the champion run the same frozen evaluation set: every (task, seed)
gives one paired difference ``d_i = challenger_i - champion_i`` of the gate's metric. The
question is one-sided: is the challenger better by *more than* a minimum effect ``delta_min``?

    H0: E[d] <= delta_min        H1: E[d] > delta_min

tested with the paired Student t statistic ``t = (mean(d) - delta_min) / se(d)`` on ``n - 1``
degrees of freedom. The challenger passes when ``p < level``, equivalently when the one-sided
lower confidence bound ``mean(d) - t_{1-level, n-1} * se(d)`` exceeds ``delta_min``. Requiring
a minimum effect (not just ``mean(d) > 0``) keeps noise-level "improvements" from churning the
champion; the level bounds how often a challenger that is *not* better gets promoted.

Guards veto a challenger whatever its primary metric: it may not spend more than
``1 + max_token_increase`` times the champion's tokens per task, nor be worse calibrated (mean
absolute error of predicted vs realised future reward) by more than ``max_calibration_increase``.

Drift. The monitor compares the champion on fresh rollouts of the current prior with what was
recorded when it was promoted: drift when its calibration error (MAE) grew, its calibration
bias (mean predicted - realised future reward) moved either way, or its success fell, by more
than a threshold (each in its own units). The bias is the sharper signal of a prior that got
worse (realised rewards fall: the bias rises) or better.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy import stats


@dataclass(frozen=True)
class PairedTest:
    """Outcome of the one-sided paired test (all in the metric's units, p unitless)."""

    n: int
    mean: float
    se: float
    p_value: float
    lower_bound: float
    """One-sided (1 - level) lower confidence bound of E[d]."""
    passes: bool
    """p < level (the challenger is better by more than the minimum effect)."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def paired_test(diffs: Sequence[float], *, min_effect: float, level: float) -> PairedTest:
    """One-sided paired t test of ``E[d] > min_effect`` at ``level``.

    Degenerate cases: fewer than two pairs never pass (no variance estimate); zero variance
    passes exactly when every difference exceeds ``min_effect``.
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    d = np.asarray(diffs, dtype=float)
    if d.ndim != 1 or not np.all(np.isfinite(d)):
        raise ValueError("paired differences must be a finite 1-d sequence")
    n = int(d.size)
    if n < 2:
        mean = float(d.mean()) if n else math.nan
        return PairedTest(n, mean, math.nan, 1.0, -math.inf, False)
    mean = float(d.mean())
    se = float(d.std(ddof=1) / math.sqrt(n))
    if se == 0.0:
        better = mean > min_effect
        return PairedTest(n, mean, 0.0, 0.0 if better else 1.0, mean, better)
    t = (mean - min_effect) / se
    p = float(stats.t.sf(t, df=n - 1))
    lower = mean - float(stats.t.ppf(1.0 - level, df=n - 1)) * se
    return PairedTest(n, mean, se, p, lower, p < level)


def guard_vetoes(challenger: Mapping[str, float | None], champion: Mapping[str, float | None],
                 *, max_token_increase: float, max_calibration_increase: float) -> list[str]:
    """Reasons the guards veto the challenger (empty: no veto).

    Keys: ``tokens_per_task`` and ``calibration_mae``; a guard whose value is missing or
    non-finite on either side is not applied (the caller records that it was not measured).
    """
    out = []
    tc, tk = _num(challenger.get("tokens_per_task")), _num(champion.get("tokens_per_task"))
    if tc is not None and tk is not None and tc > tk * (1.0 + max_token_increase):
        out.append(f"tokens per task {tc:.1f} > {1 + max_token_increase:g} x champion's "
                   f"{tk:.1f}")
    cc, ck = _num(challenger.get("calibration_mae")), _num(champion.get("calibration_mae"))
    if cc is not None and ck is not None and cc > ck + max_calibration_increase:
        out.append(f"calibration error {cc:.4f} > champion's {ck:.4f} + "
                   f"{max_calibration_increase:g}")
    return out


def calibration_mae(predicted: Sequence[float], realised: Sequence[float]) -> float:
    """Mean absolute error of predicted vs realised future reward (NaN when no states)."""
    a, b = np.asarray(predicted, dtype=float), np.asarray(realised, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"predicted {a.shape} and realised {b.shape} differ in shape")
    return float(np.abs(a - b).mean()) if a.size else math.nan


def calibration_bias(predicted: Sequence[float], realised: Sequence[float]) -> float:
    """Mean signed error, predicted - realised future reward (calibration in the large; a
    value trained on a prior that has since got worse over-predicts: positive)."""
    a, b = np.asarray(predicted, dtype=float), np.asarray(realised, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"predicted {a.shape} and realised {b.shape} differ in shape")
    return float((a - b).mean()) if a.size else math.nan


@dataclass(frozen=True)
class DriftCheck:
    """The monitor's verdict: drift or not, and why."""

    drift: bool
    reasons: tuple[str, ...]
    calibration_increase: float | None
    bias_shift: float | None
    """Change of the calibration bias since promotion (now - then)."""
    success_drop: float | None

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "reasons": list(self.reasons)}


def drift_check(baseline: Mapping[str, float | None], now: Mapping[str, float | None], *,
                max_calibration_increase: float, max_bias_shift: float,
                max_success_drop: float) -> DriftCheck:
    """Drift when the calibration error rose, the bias moved (either way) or success fell past
    its threshold since promotion.

    ``baseline`` and ``now`` hold ``calibration_mae``, ``calibration_bias`` and ``success``; a
    quantity missing on either side is not checked (its change is None).
    """
    reasons = []
    cb, cn = _num(baseline.get("calibration_mae")), _num(now.get("calibration_mae"))
    cal = None if cb is None or cn is None else cn - cb
    if cal is not None and cal > max_calibration_increase:
        reasons.append(f"calibration error {cn:.4f} vs {cb:.4f} at promotion "
                       f"(+{cal:.4f} > {max_calibration_increase:g})")
    bb, bn = _num(baseline.get("calibration_bias")), _num(now.get("calibration_bias"))
    bias = None if bb is None or bn is None else bn - bb
    if bias is not None and abs(bias) > max_bias_shift:
        reasons.append(f"calibration bias {bn:+.4f} vs {bb:+.4f} at promotion "
                       f"(moved {bias:+.4f}, beyond {max_bias_shift:g})")
    sb, sn = _num(baseline.get("success")), _num(now.get("success"))
    drop = None if sb is None or sn is None else sb - sn
    if drop is not None and drop > max_success_drop:
        reasons.append(f"success {sn:.3f} vs {sb:.3f} at promotion "
                       f"(-{drop:.3f} > {max_success_drop:g})")
    return DriftCheck(bool(reasons), tuple(reasons), cal, bias, drop)


def _num(x: object) -> float | None:
    """A finite float, else None (absent, None, NaN, or a non-number string)."""
    try:
        v = float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None
