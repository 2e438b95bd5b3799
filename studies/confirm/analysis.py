"""The declared analysis of a paired comparison, and Holm's adjustment over a study's cells.

Arm b minus arm a over the (task, seed) rows both have: seeds averaged within a task, the mean
and its 95% Student t interval over tasks (:func:`amc.stats.paired_difference`, the project's
one definition), and the **exact** two-sided sign-flip p of the per-task differences. Exact for
any number of tasks when the differences lie on a common grid (scores in hundredths, success
rates in 1/seeds, their means over seeds): the distribution of sum(±|d_i|) over all 2^n sign
assignments is counted on that grid by convolution (:func:`exact_sign_flip_p`), so 40 tasks
need no Monte-Carlo draws. Differences on no grid up to 1/10000 fall back to the project's
Monte-Carlo p, flagged ``exact: False``. Pure.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from amc.stats import paired_difference, sign_flip_p

GRID_MAX = 10_000
"""Finest grid tried for the exact p: differences that are multiples of 1/k, k <= GRID_MAX."""


def grid_of(d: np.ndarray) -> int | None:
    """The smallest k <= GRID_MAX with every d * k an integer (to 1e-6), else None."""
    for k in range(1, GRID_MAX + 1):
        x = d * k
        if np.all(np.abs(x - np.round(x)) < 1e-6):
            return k
    return None


def exact_sign_flip_p(d: Iterable[float]) -> tuple[float, bool]:
    """Two-sided sign-flip p of mean(d) = 0 and whether it is exact (see the module doc)."""
    x = np.asarray(list(d), dtype=np.float64)
    x = x[np.abs(x) > 1e-12]
    if x.size == 0:
        return 1.0, True
    k = grid_of(x)
    if k is None or int(np.abs(np.round(x * k)).sum()) > 2_000_000:
        return sign_flip_p(x), False
    ints = np.abs(np.round(x * k)).astype(np.int64)
    total = int(ints.sum())
    prob = np.zeros(2 * total + 1)  # the distribution of sum(+-|d_i|) on the grid
    prob[total] = 1.0
    for v in map(int, ints):  # each |d_i| enters with + or -, each with chance 1/2
        new = np.zeros_like(prob)
        new[v:] += 0.5 * prob[: len(prob) - v]
        new[: len(prob) - v] += 0.5 * prob[v:]
        prob = new
    obs = abs(int(np.round(x * k).sum()))
    sums = np.abs(np.arange(-total, total + 1))
    return float(min(1.0, prob[sums >= obs].sum())), True


@dataclass(frozen=True)
class Comparison:
    """Arm b minus arm a, paired (see the module doc)."""

    a: float
    b: float
    diff: float
    lo: float
    hi: float
    p: float
    exact: bool
    tasks: int
    pairs: int

    @property
    def seeds(self) -> int:
        return round(self.pairs / self.tasks) if self.tasks else 0


def compare(rows: Sequence[tuple[str, int, float, float]]) -> Comparison:
    """``rows``: (task, seed, value of a, value of b) -> b - a (ValueError on no rows)."""
    if not rows:
        raise ValueError("a comparison of no rows")
    a = {(t, s): va for t, s, va, _ in rows}
    b = {(t, s): vb for t, s, _, vb in rows}
    d = paired_difference(b, a)
    per_task: dict[str, list[float]] = {}
    for t, _, va, vb in rows:
        per_task.setdefault(t, []).append(vb - va)
    p, exact = exact_sign_flip_p(float(np.mean(v)) for v in per_task.values())
    return Comparison(float(np.mean(list(a.values()))), float(np.mean(list(b.values()))),
                      d.mean, d.lo, d.hi, p, exact, d.tasks, d.pairs)


def holm(ps: Sequence[float], m: int | None = None) -> list[float]:
    """Holm's step-down adjusted p of ``ps`` in a family of ``m`` >= len(ps) hypotheses (the
    family's unrun members count as p = 1: they rank last and change no adjusted p above)."""
    m = len(ps) if m is None else m
    if m < len(ps):
        raise ValueError(f"a family of {m} cannot hold {len(ps)} p values")
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    out = [math.nan] * len(ps)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * ps[i]))
        out[i] = running
    return out
