"""Pure statistics of the promotion gate and the drift monitor (no I/O, no registry).

Gate. The challenger and the champion run the same frozen evaluation set: every (task, seed)
gives one paired difference ``d = challenger - champion`` of the gate's metric. Seeds of one
task share the task, so they are not independent: the differences are **averaged within each
task** and the test runs over tasks (:func:`gate_test`). The question is one-sided: is the
challenger better by *more than* a minimum effect ``delta_min``?

    H0: E[d_task] <= delta_min        H1: E[d_task] > delta_min

The p-value is the **sign-flip** (paired permutation) p of the per-task differences minus
``delta_min`` (:func:`amc.stats.sign_flip_p`: exact enumeration up to 16 nonzero tasks, seeded
Monte Carlo beyond), so the level holds with few tasks where the t approximation does not; the
one-sided t lower bound ``mean - t_{1-level, n-1} se`` is recorded beside it. The challenger
passes when ``p < level``. Counting (task, seed) pairs as independent (the old
:func:`paired_test` on pairs) promotes a not-better challenger about twice as often as the
level when tasks differ in how the challenger fares on them (tests/pipeline/test_gate_stats.py).

The gate also records its **minimum detectable effect** (:func:`amc.stats.mde`): the mean
per-task improvement it detects with 80% power at its level, given the per-task sd it saw and
its number of tasks. ``promote.target_mde`` sizes the frozen set: the tasks needed to detect
that effect (:func:`amc.stats.tasks_for_power`) are recorded, and a gate on fewer says so.

A gate without power decides nothing: with ``promote.max_mde`` set, :func:`untested_reason`
says why the test is not run -- fewer than two tasks or identical per-task differences (sd 0:
no mde), a sign-flip p that cannot reach the level with so few tasks (its smallest value is
``2^-tasks``), or an mde above ``max_mde`` -- and the decision keeps the champion, saying it
decided without a test. Refusing only ever keeps, so it never adds false promotions.

Reuse over rounds (:func:`reuse_level`): every round's challenger meets the same frozen set,
so its false promotions add up over rounds. The k-th decision on one frozen set is tested at
``level / (k (k + 1))`` (alpha spending): the chance that *any* not-better challenger is ever
promoted on that set stays below ``level`` (the sum over k is ``level``), at the cost of power
in later rounds (the second decision runs at level/6, the third at level/12). A fresh frozen
set restarts the count.

Guards veto a challenger whatever its primary metric: it may not spend more than
``1 + max_token_increase`` times the champion's tokens per task, nor be worse calibrated (mean
absolute error of predicted vs realised future reward) by more than ``max_calibration_increase``.

Drift. The monitor compares the champion on fresh rollouts of the current prior with what was
recorded when it was promoted, and flags only what got *worse*: its AMC gain over Best-of-N
(success of SMC twisted by it minus Best-of-N's, same tasks and seeds) fell, its success fell,
its calibration error (MAE) grew, or its calibration bias (mean predicted - realised future
reward) moved away from 0, each by more than a threshold in its own units. A calibration that
improved (MAE down, bias toward 0) never flags: a head that predicts better has not drifted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy import stats

from amc import stats as tstats


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


def _checked(diffs: Sequence[float], level: float, what: str) -> np.ndarray:
    """``diffs`` as a 1-d float array (clear errors for a bad level or non-finite input)."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    d = np.asarray(diffs, dtype=float)
    if d.ndim != 1 or not np.all(np.isfinite(d)):
        raise ValueError(f"{what} differences must be a finite 1-d sequence")
    return d


def paired_test(diffs: Sequence[float], *, min_effect: float, level: float) -> PairedTest:
    """One-sided paired t test of ``E[d] > min_effect`` at ``level``.

    Degenerate cases: fewer than two pairs never pass (no variance estimate); zero variance
    passes exactly when every difference exceeds ``min_effect``.
    """
    d = _checked(diffs, level, "paired")
    n = int(d.size)
    if n < 2:
        mean = float(d.mean()) if n else math.nan
        return PairedTest(n, mean, math.nan, 1.0, -math.inf, False)
    mean, se = tstats.mean_se(d)
    if se == 0.0:
        better = mean > min_effect
        return PairedTest(n, mean, 0.0, 0.0 if better else 1.0, mean, better)
    t = (mean - min_effect) / se
    p = float(stats.t.sf(t, df=n - 1))
    lower = mean - float(stats.t.ppf(1.0 - level, df=n - 1)) * se
    return PairedTest(n, mean, se, p, lower, p < level)


@dataclass(frozen=True)
class GateTest:
    """Outcome of the gate's test over tasks (metric units; p unitless)."""

    tasks: int
    mean: float
    """Mean over tasks of the per-task (seed-averaged) differences."""
    se: float
    """Its standard error over tasks (:func:`amc.stats.mean_se`)."""
    p_value: float
    """One-sided sign-flip p of mean > min_effect (the decision's p)."""
    exact: bool
    """Whether p enumerated every sign assignment (else seeded Monte Carlo)."""
    t_p_value: float
    """One-sided t p of the same hypothesis (recorded beside the exact p)."""
    lower_bound: float
    """One-sided (1 - level) t lower confidence bound of the mean."""
    mde: float
    """Minimum detectable effect at the level and ``power`` for this many tasks and the
    observed per-task sd (NaN below two tasks or at sd 0)."""
    level: float
    passes: bool
    """p_value < level."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def gate_test(per_task: Sequence[float], *, min_effect: float, level: float,
              power: float = 0.8, seed: int = 0) -> GateTest:
    """The gate's one-sided test of ``E[d_task] > min_effect`` over tasks (module docstring).

    ``per_task``: one seed-averaged difference per task. Fewer than two tasks never pass.
    """
    d = _checked(per_task, level, "per-task")
    n = int(d.size)
    mean, se = tstats.mean_se(d)
    if n < 2:
        return GateTest(n, mean, se, 1.0, True, 1.0, -math.inf, math.nan, level, False)
    k = int(np.count_nonzero(np.abs(d - min_effect) > 1e-12))
    p = tstats.sign_flip_p(d, null=min_effect, alternative="greater", seed=seed)
    if se > 0:
        t_p = float(stats.t.sf((mean - min_effect) / se, df=n - 1))
        lower = mean - float(stats.t.ppf(1.0 - level, df=n - 1)) * se
    else:
        t_p, lower = (0.0 if mean > min_effect else 1.0), mean
    sd = float(d.std(ddof=1))
    mde = tstats.mde(sd, n, level=level, power=power, alternative="greater")
    return GateTest(n, mean, se, p, k <= tstats.EXACT_MAX, t_p, lower, mde, level,
                    bool(p < level))


def sign_flip_min_tasks(level: float) -> int:
    """The fewest tasks whose one-sided sign-flip p can go below ``level`` (its smallest value
    over n tasks is ``2^-n``): 5 at 0.05, 6 at 0.025."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    return math.floor(math.log2(1.0 / level)) + 1


def untested_reason(t: GateTest, *, max_mde: float | None) -> str | None:
    """Why the gate decides without a test (None: powered, or ``max_mde`` None: unchecked).

    ``t``: the :func:`gate_test` of the per-task differences. The reasons, first that applies:
    fewer than two tasks, sd 0 (no mde), a smallest attainable sign-flip p ``2^-tasks`` not
    below the level, an mde above ``max_mde``.
    """
    if max_mde is None:
        return None
    if not max_mde > 0:
        raise ValueError(f"max_mde must be > 0, got {max_mde}")
    if t.tasks < 2:
        return f"{t.tasks} task(s) give no per-task sd, so no mde ({t.tasks} tasks, sd n/a)"
    if not t.se > 0:
        return (f"every task's difference is {t.mean:+.4f}, so no mde ({t.tasks} tasks, "
                f"sd 0)")
    if t.tasks < sign_flip_min_tasks(t.level):
        floor = 2.0 ** -t.tasks
        return (f"the sign-flip p over {t.tasks} tasks is at least 2^-{t.tasks} = {floor:.3g},"
                f" not below the level {t.level:.3g} ({t.tasks} tasks, mde {t.mde:.3g})")
    if not t.mde <= max_mde:
        return f"under-powered ({t.tasks} tasks, mde {t.mde:.3g} > max_mde {max_mde:g})"
    return None


def gate_passes_many(per_task: np.ndarray, *, min_effect: float, level: float,
                     seed: int = 0, n_resamples: int = 2000) -> np.ndarray:
    """:func:`gate_test`'s decision for each row of ``per_task`` (gates x tasks), vectorised
    for simulation (the sign assignments are shared by the rows)."""
    x = np.asarray(per_task, dtype=float) - min_effect
    signs, exact = tstats.flips(x.shape[1], n_resamples=n_resamples, seed=seed)
    return tstats.sign_flip_p_many(x, signs, exact, alternative="greater") < level


def reuse_level(level: float, k: int) -> float:
    """The level of the k-th decision (k >= 1) on one frozen set: ``level / (k (k + 1))``."""
    if k < 1:
        raise ValueError(f"decision number k must be >= 1, got {k}")
    return level / (k * (k + 1))


def task_differences(rows: Sequence[tuple[str, float]]) -> dict[str, float]:
    """Per task, the mean of its (task, difference) rows (seeds averaged within a task)."""
    return tstats.task_means(rows)


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
    bias_growth: float | None = None
    """Growth of the bias's magnitude since promotion (|now| - |then|; < 0: it improved)."""
    gain_drop: float | None = None
    """Fall of the AMC gain over Best-of-N since promotion (then - now)."""

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "reasons": list(self.reasons)}


def drift_check(baseline: Mapping[str, float | None], now: Mapping[str, float | None], *,
                max_calibration_increase: float, max_bias_shift: float,
                max_success_drop: float, max_gain_drop: float = math.inf,
                level: float | None = None) -> DriftCheck:
    """Drift when something got worse past its threshold since promotion: the AMC gain over
    Best-of-N fell, success fell, the calibration error rose, or the bias moved away from 0.

    ``baseline`` and ``now`` hold ``gain``, ``success``, ``calibration_mae`` and
    ``calibration_bias``; a quantity missing on either side is not checked (its change is
    None). Improvements never flag: a lower MAE, a bias closer to 0 (whichever side), a higher
    gain or success. With ``level``, a worsening past its threshold flags only when it is also
    past sampling noise: worsening > z * hypot(se then, se now), the standard errors being
    ``<quantity>_se`` of either side (absent: 0, e.g. a version promoted before they were
    recorded) and z the one-sided normal quantile at ``level / 4`` (the four criteria share
    the check's false-alarm level). Without ``level``: the point thresholds alone.
    """
    z = None if level is None else float(stats.norm.ppf(1.0 - level / 4.0))

    def past(q: str, worse: float | None, threshold: float) -> str | None:
        """None when ``worse`` does not flag, else the reason's noise suffix."""
        if worse is None or worse <= threshold:
            return None
        se = math.hypot(_num(baseline.get(f"{q}_se")) or 0.0, _num(now.get(f"{q}_se")) or 0.0)
        if z is not None and worse <= z * se:
            return None
        return f", {worse / se:.1f} s.e." if z is not None and se > 0 else ""

    def change(q: str) -> tuple[float | None, float | None]:
        return _num(baseline.get(q)), _num(now.get(q))

    reasons = []
    gb, gn = change("gain")
    gdrop = None if gb is None or gn is None else gb - gn
    if (why := past("gain", gdrop, max_gain_drop)) is not None:
        reasons.append(f"AMC gain over Best-of-N {gn:+.3f} vs {gb:+.3f} at promotion "
                       f"(-{gdrop:.3f} > {max_gain_drop:g}{why})")
    sb, sn = change("success")
    drop = None if sb is None or sn is None else sb - sn
    if (why := past("success", drop, max_success_drop)) is not None:
        reasons.append(f"success {sn:.3f} vs {sb:.3f} at promotion "
                       f"(-{drop:.3f} > {max_success_drop:g}{why})")
    cb, cn = change("calibration_mae")
    cal = None if cb is None or cn is None else cn - cb
    if (why := past("calibration_mae", cal, max_calibration_increase)) is not None:
        reasons.append(f"calibration error {cn:.4f} vs {cb:.4f} at promotion "
                       f"(+{cal:.4f} > {max_calibration_increase:g}{why})")
    bb, bn = change("calibration_bias")
    bias = None if bb is None or bn is None else bn - bb
    growth = None if bb is None or bn is None else abs(bn) - abs(bb)
    if (why := past("calibration_bias", growth, max_bias_shift)) is not None:
        reasons.append(f"calibration bias {bn:+.4f} vs {bb:+.4f} at promotion "
                       f"(|bias| grew {growth:+.4f}, beyond {max_bias_shift:g}{why})")
    return DriftCheck(bool(reasons), tuple(reasons), cal, bias, drop, growth, gdrop)


def cluster_se(values: Sequence[float], clusters: Sequence[object]) -> float:
    """Standard error of the mean of ``values`` where those sharing a cluster (one task's
    states) are correlated: the cluster-robust estimate sqrt(g / (g - 1) * sum over clusters
    of (sum of its deviations from the mean)^2) / n, g clusters; with one value per cluster
    it is sd / sqrt(n). NaN with fewer than two clusters."""
    x = np.asarray(values, dtype=float)
    if x.size != len(clusters):
        raise ValueError(f"{x.size} values but {len(clusters)} cluster labels")
    sums: dict[object, float] = {}
    for c, r in zip(clusters, x - x.mean() if x.size else x, strict=True):
        sums[c] = sums.get(c, 0.0) + float(r)
    g = len(sums)
    if g < 2:
        return math.nan
    return math.sqrt(g / (g - 1) * sum(v * v for v in sums.values())) / x.size


def _num(x: object) -> float | None:
    """A finite float, else None (absent, None, NaN, or a non-number string)."""
    try:
        v = float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None
