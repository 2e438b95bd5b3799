"""Statistics over tasks: standard errors and paired differences, as the paper reports them.

A run gives one score per (task, seed). Seeds of the same task are not independent samples of
the task distribution -- they share the task -- so the unit of replication is the *task*:

- :func:`task_mean_se`: average the seeds within each task first, then the mean and standard
  error over tasks (s.e. = sample sd / sqrt(#tasks); NaN with fewer than two tasks).
- :func:`paired_difference`: two methods run on the same (task, seed) share the task's
  difficulty (and, for equal N, much of its randomness), so their difference is taken per
  (task, seed) pair, averaged within each task, and summarised over tasks: mean, s.e. and a
  95% **Student t** interval with #tasks - 1 degrees of freedom (mean ± t_{0.975} s.e.).
  Only pairs present for both methods count. Beside the interval it gives the **exact
  sign-flip p** (:func:`sign_flip_p`) of the same per-task differences; the difference
  *separates* only when both agree (the interval excludes 0 and p < 1 - level). With a
  handful of nonzero task differences the t interval is anti-conservative, the sign-flip p is
  not: under H0 each task's difference is as likely to have either sign, so the p-value is the
  share of the 2^k sign assignments of the k nonzero differences whose |mean| is at least the
  observed one (exact for k <= ``EXACT_MAX``, seeded Monte Carlo beyond).
- :func:`mean_se`: the one standard error (sample sd / sqrt(n)) used by the tables and the
  promotion gate (:func:`row_mean_se`: the same, row by row, for simulations);
  :func:`t_power`, :func:`mde` and :func:`tasks_for_power` size a paired test over tasks
  (two-sided or one-sided t, noncentral t power).

A NaN score (e.g. a deployable selection without a selection value) makes the summary NaN: an
unmeasured metric is never reported as a number. Pure functions; no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

Key = tuple[str, int]
"""(task id, seed)."""


def task_means(rows: Iterable[tuple[str, float]]) -> dict[str, float]:
    """Mean score of each task over its seeds (``rows``: (task id, score) per run)."""
    acc: dict[str, list[float]] = {}
    for task, x in rows:
        acc.setdefault(task, []).append(float(x))
    return {t: float(np.mean(xs)) for t, xs in acc.items()}


def mean_se(x: Iterable[float] | np.ndarray) -> tuple[float, float]:
    """(mean, s.e.) with s.e. = sample sd / sqrt(n): NaN s.e. below two values, NaN both
    when empty. The one standard-error definition of the project's tables and gate."""
    xs = np.asarray(list(x) if not isinstance(x, np.ndarray) else x, dtype=np.float64)
    if xs.ndim != 1:
        raise ValueError(f"mean_se needs a 1-d sequence, got shape {xs.shape}")
    if xs.size == 0:
        return math.nan, math.nan
    mean, se = row_mean_se(xs[None, :])
    return float(mean[0]), float(se[0])


def row_mean_se(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`mean_se` of each row of a 2-d array (vectorised, for simulations): the row
    means and s.e. = sample sd / sqrt(#columns), NaN s.e. below two columns."""
    xs = np.asarray(x, dtype=np.float64)
    if xs.ndim != 2 or xs.shape[1] == 0:
        raise ValueError(f"row_mean_se needs a 2-d array with columns, got shape {xs.shape}")
    n = xs.shape[1]
    if n == 1:
        return xs[:, 0].copy(), np.full(xs.shape[0], math.nan)
    return xs.mean(axis=1), xs.std(axis=1, ddof=1) / math.sqrt(n)


def task_mean_se(rows: Iterable[tuple[str, float]]) -> tuple[float, float]:
    """(mean, s.e.) over tasks of the per-task seed means (see the module docstring)."""
    return mean_se(np.array(list(task_means(rows).values()), dtype=np.float64))


def t_quantile(p: float, df: int) -> float:
    """The p-quantile of Student's t with ``df`` degrees of freedom."""
    from scipy.stats import t  # the analysis extra; imported when an interval is wanted

    return float(t.ppf(p, df))


@dataclass(frozen=True)
class PairedDifference:
    """Method a minus method b over their common (task, seed) pairs, summarised over tasks."""

    mean: float
    se: float
    lo: float
    hi: float
    pairs: int
    tasks: int
    p: float = math.nan
    """Exact (two-sided) sign-flip p of the per-task differences (:func:`sign_flip_p`)."""
    level: float = 0.95
    """Confidence level of [lo, hi]; the sign-flip test is read at 1 - level."""

    @property
    def interval_excludes_zero(self) -> bool:
        """Whether the t interval excludes 0."""
        return bool(self.lo > 0 or self.hi < 0)

    @property
    def separates(self) -> bool:
        """Both tests agree: the t interval excludes 0 *and* the sign-flip p < 1 - level."""
        return self.interval_excludes_zero and bool(self.p < 1.0 - self.level)

    def to_dict(self) -> dict[str, float | int]:
        return {"mean": self.mean, "se": self.se, "lo": self.lo, "hi": self.hi,
                "pairs": self.pairs, "tasks": self.tasks, "p": self.p}


def paired_difference(a: Mapping[Key, float], b: Mapping[Key, float],
                      level: float = 0.95) -> PairedDifference:
    """a - b paired by (task, seed), averaged within task, t interval over tasks."""
    keys = sorted(set(a) & set(b))
    per_task = task_means((k[0], float(a[k]) - float(b[k])) for k in keys)
    d = np.array(list(per_task.values()), dtype=np.float64)
    mean, se = mean_se(d)
    if d.size < 2 or not math.isfinite(se):
        lo = hi = math.nan
    else:
        half = t_quantile(0.5 + level / 2, d.size - 1) * se
        lo, hi = mean - half, mean + half
    p = sign_flip_p(d) if d.size and np.all(np.isfinite(d)) else math.nan
    return PairedDifference(mean, se, lo, hi, len(keys), int(d.size), p, level)


EXACT_MAX = 16
"""Sign-flip p: exact enumeration up to this many nonzero differences (2^16 assignments)."""
MC_FLIPS = 20_000
"""Sign-flip p beyond EXACT_MAX: this many seeded random sign assignments."""


def flips(k: int, *, exact_max: int = EXACT_MAX, n_resamples: int = MC_FLIPS,
          seed: int = 0) -> tuple[np.ndarray, bool]:
    """Sign assignments of k values: every one of the 2^k (exact) when k <= exact_max, else
    ``n_resamples`` seeded random ones. Returns (signs of shape (m, k), exact)."""
    if k <= exact_max:
        codes = np.arange(2 ** k, dtype=np.int64)[:, None] >> np.arange(k, dtype=np.int64)
        return 1.0 - 2.0 * (codes & 1).astype(np.float64), True
    rng = np.random.default_rng(seed)
    return rng.choice(np.array([-1.0, 1.0]), size=(n_resamples, k)), False


def sign_flip_p(d: Iterable[float] | np.ndarray, *, null: float = 0.0,
                alternative: str = "two-sided", exact_max: int = EXACT_MAX,
                n_resamples: int = MC_FLIPS, seed: int = 0) -> float:
    """Sign-flip (paired permutation) p of ``mean(d) = null`` against ``alternative``
    (``two-sided`` or ``greater``: mean(d) > null), over the nonzero ``d - null``.

    Exact: the share of all 2^k sign assignments whose statistic is at least the observed
    one (the identity counts). Monte Carlo (k > exact_max): (1 + hits) / (1 + n_resamples),
    with a seeded generator, never below the exact test's resolution.
    """
    x = np.asarray(list(d) if not isinstance(d, np.ndarray) else d, dtype=np.float64) - null
    if not np.all(np.isfinite(x)):
        raise ValueError("sign-flip p of non-finite differences")
    x = x[np.abs(x) > 1e-12]
    if x.size == 0:
        _check_alternative(alternative)
        return 1.0
    signs, exact = flips(int(x.size), exact_max=exact_max, n_resamples=n_resamples, seed=seed)
    return float(sign_flip_p_many(x[None, :], signs, exact, alternative=alternative)[0])


def sign_flip_p_many(x: np.ndarray, signs: np.ndarray, exact: bool, *,
                     alternative: str = "two-sided") -> np.ndarray:
    """Vectorised :func:`sign_flip_p` of each row of ``x`` (already centred on the null), with
    the sign assignments ``signs`` of :func:`flips` (shared by the rows). Zeros may stay in a
    row: a flipped zero is zero (the enumeration then counts each assignment twice, which
    leaves the exact share unchanged)."""
    _check_alternative(alternative)
    stat = x @ signs.T  # (rows, assignments)
    obs = x.sum(axis=1, keepdims=True)
    tol = 1e-9 * np.maximum(1.0, np.abs(x).sum(axis=1, keepdims=True))
    hits = (np.abs(stat) >= np.abs(obs) - tol) if alternative == "two-sided" else \
        (stat >= obs - tol)
    if exact:
        return hits.mean(axis=1)
    return (1 + hits.sum(axis=1)) / (1 + hits.shape[1])


def _check_alternative(alternative: str) -> None:
    if alternative not in ("two-sided", "greater"):
        raise ValueError(f"alternative must be two-sided or greater, not {alternative!r}")


def t_power(effect: float, sd: float, n: int, *, level: float = 0.05,
            alternative: str = "two-sided") -> float:
    """Power of the t test over n tasks (per-task differences of sd ``sd``) to reject
    ``mean = 0`` at ``level`` when the mean is ``effect`` (noncentral t)."""
    from scipy.stats import nct, t

    if n < 2 or sd <= 0:
        return math.nan
    df, nc = n - 1, effect * math.sqrt(n) / sd
    if alternative == "two-sided":
        c = float(t.ppf(1 - level / 2, df))
        pw = float(nct.sf(c, df, nc) + nct.cdf(-c, df, nc))
    else:
        pw = float(nct.sf(float(t.ppf(1 - level, df)), df, nc))
    return pw if math.isfinite(pw) else float(nc > 0)  # far tails: scipy's nct gives NaN


def tasks_for_power(effect: float, sd: float, *, level: float = 0.05, power: float = 0.8,
                    alternative: str = "two-sided", n_max: int = 100_000) -> int:
    """The fewest tasks whose t test detects ``effect`` with ``power`` at ``level``."""
    n = 2
    while t_power(effect, sd, n, level=level, alternative=alternative) < power:
        n += 1
        if n > n_max:
            raise ValueError(f"more than {n_max} tasks needed for effect {effect} at sd {sd}")
    return n


def mde(sd: float, n: int, *, level: float = 0.05, power: float = 0.8,
        alternative: str = "greater") -> float:
    """Minimum detectable effect: the mean the t test over n tasks (sd ``sd``) detects with
    ``power`` at ``level`` (solved on the noncentral t; NaN below two tasks or at sd 0)."""
    from scipy.optimize import brentq

    if n < 2 or not sd > 0 or not math.isfinite(sd):
        return math.nan
    hi = sd
    while t_power(hi, sd, n, level=level, alternative=alternative) < power:
        hi *= 2
    return float(brentq(lambda e: t_power(e, sd, n, level=level, alternative=alternative)
                        - power, 0.0, hi, xtol=1e-10 * sd))
