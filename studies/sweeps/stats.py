"""Paired comparisons of two methods over a cell's aligned (task, seed) rows.

Both methods of a cell run on the same (task, seed) pairs, so the comparison is the mean of
the per-pair differences d = AMC - Best-of-N, with seeds averaged within a task and the
standard error and 95% Student t interval taken over tasks -- the project's one definition,
:func:`amc.stats.paired_difference`; this module only adds both methods' means. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from amc.stats import PairedDifference, paired_difference, task_mean_se


@dataclass(frozen=True)
class Paired:
    """Means of ``a`` and ``b`` over the rows, and the paired difference ``d`` = b - a."""

    a: float
    b: float
    d: PairedDifference


def se_over_tasks(tasks: Sequence[str], x: Sequence[float]) -> float:
    """Standard error of the mean of ``x`` with seeds averaged within a task first."""
    return task_mean_se(zip(tasks, map(float, x), strict=True))[1]


def paired(tasks: Sequence[str], a: Sequence[float], b: Sequence[float]) -> Paired:
    """The paired comparison of b against a over aligned rows (row i: task ``tasks[i]``)."""
    if not len(tasks):
        raise ValueError("paired comparison of no pairs")
    av, bv = np.asarray(a, float), np.asarray(b, float)
    if av.shape != bv.shape or av.size != len(tasks):
        raise ValueError(f"paired needs equal lengths: {len(tasks)} tasks, {av.size}, {bv.size}")
    keys = [(t, i) for i, t in enumerate(tasks)]  # row index: unique, same task grouping
    d = paired_difference(dict(zip(keys, bv, strict=True)), dict(zip(keys, av, strict=True)))
    return Paired(float(av.mean()), float(bv.mean()), d)
