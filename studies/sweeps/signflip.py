"""The sign-flip (randomisation) test of a paired difference, clustered by task. Pure.

Under the null "AMC and Best-of-N are exchangeable on every task", the sign of each task's mean
difference d_i (seeds averaged within the task first) is a fair coin. The two-sided p value is
the share of the 2^n sign assignments whose |sum| is at least the observed |sum|. With n <= 20
tasks every assignment is enumerated (exact); above that, the same statistic over ``draws``
seeded random assignments (plus the observed one, so p > 0), which :class:`SignFlip` says.

A small local helper for the per-benchmark evidence; the project-wide exact p of the gate
statistics lives in :mod:`amc.stats` once it has one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

EXACT_MAX = 20
"""Most tasks whose 2^n sign assignments are enumerated."""


@dataclass(frozen=True)
class SignFlip:
    """Two-sided sign-flip p of the mean of per-task differences."""

    p: float
    """Share of sign assignments with |sum d| >= the observed |sum d|."""
    tasks: int
    """Number of task clusters (n)."""
    exact: bool
    """Whether every assignment was enumerated (else ``draws`` random ones)."""
    draws: int = 0
    """Random assignments drawn (0 when exact)."""

    def __str__(self) -> str:
        """``0.012``, or ``0.012 (MC)``; at the Monte-Carlo floor ``< 2e-05 (MC)``."""
        if self.exact:
            return f"{self.p:.2g}"
        if self.p <= 1.5 / (self.draws + 1):
            return f"< {2 / (self.draws + 1):.0e} (MC)"
        return f"{self.p:.2g} (MC)"


def task_differences(tasks: Sequence[str], d: Sequence[float]) -> np.ndarray:
    """Per-task means of the per-row differences (in first-seen task order)."""
    if len(tasks) != len(d):
        raise ValueError(f"{len(tasks)} task labels for {len(d)} differences")
    sums: dict[str, list[float]] = {}
    for t, x in zip(tasks, d, strict=True):
        sums.setdefault(t, []).append(float(x))
    return np.array([np.mean(v) for v in sums.values()])


def sign_flip_p(d: Sequence[float] | np.ndarray, draws: int = 100_000,
                seed: int = 0) -> SignFlip:
    """The two-sided sign-flip p of the per-task differences ``d`` (see the module docs)."""
    x = np.asarray(d, dtype=np.float64)
    n = x.size
    if n == 0:
        raise ValueError("sign-flip test of no tasks")
    observed = abs(x.sum()) - 1e-12 * max(1.0, float(np.abs(x).sum()))  # float ties count
    if n <= EXACT_MAX:
        signs = ((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1) * 2 - 1
        return SignFlip(float(np.mean(np.abs(signs @ x) >= observed)), n, True)
    rng = np.random.default_rng(seed)
    hits = 1  # the observed assignment itself
    for start in range(0, draws, 10_000):
        s = rng.choice((-1.0, 1.0), size=(min(10_000, draws - start), n))
        hits += int(np.sum(np.abs(s @ x) >= observed))
    return SignFlip(hits / (draws + 1), n, False, draws)


def paired_sign_flip(tasks: Sequence[str], a: Sequence[float], b: Sequence[float],
                     draws: int = 100_000) -> SignFlip:
    """Sign-flip p of b - a over aligned rows clustered by ``tasks``."""
    d = np.asarray(b, float) - np.asarray(a, float)
    return sign_flip_p(task_differences(tasks, list(d)), draws)
