"""Resampling schemes, one signature, selected by name.

Every scheme is ``f(W, n, rng) -> A``: given normalised weights ``W`` (length M, summing to
one), draw ``n`` ancestor indices ``A`` (sorted, values in [0, M)) such that each index i is
selected ``N_i`` times with E[N_i] = n * W_i (unbiasedness). They differ in variance:

- ``multinomial``: n i.i.d. draws from W (the paper's; highest variance).
- ``stratified``: one uniform draw in each of n equal strata of [0, 1).
- ``systematic``: a single uniform draw shifted by 1/n; lowest variance in practice, but its
  counts depend on the order of the particles.
- ``residual``: floor(n W_i) copies deterministically, the remaining slots by multinomial on
  the residual weights.

All take an explicit ``numpy.random.Generator``; none touches global random state.
References: Douc, Cappe & Moulines (2005); Chopin & Papaspiliopoulos (2020), ch. 9.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from amc.registry import UnknownNameError

Resampler = Callable[[NDArray[np.float64], int, np.random.Generator], NDArray[np.int64]]


def _validate(W: NDArray[np.float64], n: int) -> NDArray[np.float64]:
    W = np.asarray(W, dtype=np.float64).reshape(-1)
    if W.size == 0:
        raise ValueError("cannot resample an empty population")
    if n < 1:
        raise ValueError(f"need n >= 1 offspring, got {n}")
    if not np.all(np.isfinite(W)) or np.any(W < 0):
        raise ValueError("weights must be finite and non-negative")
    s = W.sum()
    if not s > 0:
        raise ValueError("weights sum to zero; normalise with LogWeights.normalised() first")
    return W / s


def _inverse_cdf(u: NDArray[np.float64], W: NDArray[np.float64]) -> NDArray[np.int64]:
    """Indices i with CDF[i-1] <= u < CDF[i] for sorted uniforms u in [0, 1)."""
    cdf = np.cumsum(W)
    cdf[-1] = 1.0  # float round-off must not let u fall past the last particle
    idx = np.searchsorted(cdf, u, side="right")
    # A particle of zero weight can never be picked: searchsorted(side="right") skips flat
    # steps of the CDF, and the clip guards u == 1.0 - eps after the fix above.
    return np.minimum(idx, W.size - 1).astype(np.int64)


def multinomial(W: NDArray[np.float64], n: int, rng: np.random.Generator) -> NDArray[np.int64]:
    """n independent draws from the categorical distribution W."""
    W = _validate(W, n)
    return np.sort(_inverse_cdf(np.sort(rng.random(n)), W))


def stratified(W: NDArray[np.float64], n: int, rng: np.random.Generator) -> NDArray[np.int64]:
    """One uniform draw in each stratum [k/n, (k+1)/n)."""
    W = _validate(W, n)
    return _inverse_cdf((np.arange(n) + rng.random(n)) / n, W)


def systematic(W: NDArray[np.float64], n: int, rng: np.random.Generator) -> NDArray[np.int64]:
    """A single uniform draw, shifted by k/n for k = 0..n-1."""
    W = _validate(W, n)
    return _inverse_cdf((np.arange(n) + rng.random()) / n, W)


def residual(W: NDArray[np.float64], n: int, rng: np.random.Generator) -> NDArray[np.int64]:
    """floor(n W_i) deterministic copies, the rest multinomial on the residual weights."""
    W = _validate(W, n)
    nw = n * W
    counts = np.floor(nw).astype(np.int64)
    rest = n - int(counts.sum())
    if rest > 0:
        r = nw - counts
        counts += np.bincount(multinomial(r / r.sum(), rest, rng), minlength=W.size)
    return np.repeat(np.arange(W.size, dtype=np.int64), counts)


RESAMPLERS: dict[str, Resampler] = {
    "multinomial": multinomial,
    "stratified": stratified,
    "systematic": systematic,
    "residual": residual,
}


def get_resampler(name: str) -> Resampler:
    """The scheme registered as ``name`` (clear error listing the known ones)."""
    try:
        return RESAMPLERS[name]
    except KeyError:
        raise UnknownNameError(
            f"unknown resampler {name!r}; known: {', '.join(sorted(RESAMPLERS))}"
        ) from None


def offspring_counts(ancestors: NDArray[np.int64], m: int) -> NDArray[np.int64]:
    """How many times each of the m particles was selected."""
    return np.bincount(ancestors, minlength=m)
