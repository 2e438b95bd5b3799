"""Statistics over tasks: standard errors and paired differences, as the paper reports them.

A run gives one score per (task, seed). Seeds of the same task are not independent samples of
the task distribution -- they share the task -- so the unit of replication is the *task*:

- :func:`task_mean_se`: average the seeds within each task first, then the mean and standard
  error over tasks (s.e. = sample sd / sqrt(#tasks); NaN with fewer than two tasks).
- :func:`paired_difference`: two methods run on the same (task, seed) share the task's
  difficulty (and, for equal N, much of its randomness), so their difference is taken per
  (task, seed) pair, averaged within each task, and summarised over tasks: mean, s.e. and a
  95% **Student t** interval with #tasks - 1 degrees of freedom (mean ± t_{0.975} s.e.).
  Only pairs present for both methods count.

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


def _mean_se(xs: np.ndarray) -> tuple[float, float]:
    if xs.size == 0:
        return math.nan, math.nan
    if xs.size == 1:
        return float(xs[0]), math.nan
    return float(xs.mean()), float(xs.std(ddof=1) / math.sqrt(xs.size))


def task_mean_se(rows: Iterable[tuple[str, float]]) -> tuple[float, float]:
    """(mean, s.e.) over tasks of the per-task seed means (see the module docstring)."""
    return _mean_se(np.array(list(task_means(rows).values()), dtype=np.float64))


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

    @property
    def separates(self) -> bool:
        """Whether the 95% interval excludes 0."""
        return bool(self.lo > 0 or self.hi < 0)

    def to_dict(self) -> dict[str, float | int]:
        return {"mean": self.mean, "se": self.se, "lo": self.lo, "hi": self.hi,
                "pairs": self.pairs, "tasks": self.tasks}


def paired_difference(a: Mapping[Key, float], b: Mapping[Key, float],
                      level: float = 0.95) -> PairedDifference:
    """a - b paired by (task, seed), averaged within task, t interval over tasks."""
    keys = sorted(set(a) & set(b))
    per_task = task_means((k[0], float(a[k]) - float(b[k])) for k in keys)
    d = np.array(list(per_task.values()), dtype=np.float64)
    mean, se = _mean_se(d)
    if d.size < 2 or not math.isfinite(se):
        lo = hi = math.nan
    else:
        half = t_quantile(0.5 + level / 2, d.size - 1) * se
        lo, hi = mean - half, mean + half
    return PairedDifference(mean, se, lo, hi, len(keys), int(d.size))
