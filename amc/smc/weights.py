"""Immutable log-weights: normalisation, ESS and the evidence increment, all in log space.

A population of N particles carries *unnormalised* log-weights ``log_w``. Everything a sampler
needs is derived from them with log-sum-exp, never with a bare ``exp``:

- normalised weights  W_i = exp(log_w_i - logsumexp(log_w))
- effective sample size  ESS = 1 / sum_i W_i^2            (in [1, N])
- log-mean weight  log_mean = logsumexp(log_w) - log N    (the running log Z estimate when the
  weights start at 0 and resampling preserves the total mass)

Degenerate case: if every log-weight is -inf (every particle has zero weight, e.g. all hit an
impossible state), normalisation is undefined. We then return *uniform* weights, report
``degenerate = True`` and emit a :class:`DegenerateWeightsWarning`; no NaN ever leaves this
module. A NaN log-weight is a bug upstream (a broken value model) and raises ``ValueError``.

The weight update itself is :func:`log_weight_increment`, the README's equation

    Delta log w = (f(s_t) - f(s_t0) + sum_{tau=t0+1..t} r_tau) / beta

for a particle whose value f was last evaluated after step t0 (f(s_0) := 0, f(terminal) = 0
and f(s_T) = 0 at the horizon).

Example::

    lw = LogWeights.uniform(4).add(np.array([0.0, -1.0, -np.inf, 2.0]))
    lw.normalised(), lw.ess(), lw.log_mean()
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray


class DegenerateWeightsWarning(RuntimeWarning):
    """Every weight is zero (all log-weights are -inf); uniform weights were used instead."""


def logsumexp(x: NDArray[np.float64]) -> float:
    """log(sum(exp(x))) computed stably; -inf for an empty or all -inf input.

    If some entries are +inf the result is +inf.
    """
    if x.size == 0:
        return -np.inf
    m = float(np.max(x))
    if np.isneginf(m):
        return -np.inf
    if np.isposinf(m):
        return np.inf
    return m + float(np.log(np.sum(np.exp(x - m))))


def log_weight_increment(f_now: float, f_last: float, reward_since: float,
                         beta: float) -> float:
    """Delta log w = (f(s_t) - f(s_t0) + sum of rewards since t0) / beta, in nats.

    ``f_now`` is f at the new state (0 for a terminal state or the horizon), ``f_last`` f at
    the last evaluation t0, ``reward_since`` the sum of per-step rewards after t0. Exact by
    telescoping however many steps lie between t0 and t.
    """
    if not beta > 0:
        raise ValueError(f"beta must be > 0, got {beta}")
    return (reward_since + f_now - f_last) / beta


def _checked(log_w: ArrayLike) -> NDArray[np.float64]:
    a = np.array(log_w, dtype=np.float64).reshape(-1)
    if a.size == 0:
        raise ValueError("a population needs at least one particle")
    if np.isnan(a).any():
        raise ValueError(f"NaN log-weight at positions {np.flatnonzero(np.isnan(a)).tolist()}")
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class LogWeights:
    """Unnormalised log-weights of a population; every operation returns a new object."""

    log_w: NDArray[np.float64]

    def __post_init__(self) -> None:
        object.__setattr__(self, "log_w", _checked(self.log_w))

    @classmethod
    def uniform(cls, n: int) -> LogWeights:
        """N particles with log-weight 0 (weight 1): the start of a run."""
        if n < 1:
            raise ValueError(f"need n >= 1 particles, got {n}")
        return cls(np.zeros(n))

    @property
    def n(self) -> int:
        """Number of particles."""
        return int(self.log_w.size)

    def add(self, delta: ArrayLike) -> LogWeights:
        """Multiply the weights by exp(delta) (add in log space)."""
        d = np.asarray(delta, dtype=np.float64)
        if np.isnan(d).any():
            raise ValueError(f"NaN log-weight increment at {np.flatnonzero(np.isnan(d)).tolist()}")
        # -inf + +inf would be NaN: a zero weight stays zero whatever the increment.
        with np.errstate(invalid="ignore"):
            out = np.where(np.isneginf(self.log_w), -np.inf, self.log_w + d)
        return LogWeights(out)

    @property
    def degenerate(self) -> bool:
        """True when every weight is zero."""
        return bool(np.all(np.isneginf(self.log_w)))

    def normalised(self) -> NDArray[np.float64]:
        """Weights summing to 1 (uniform, with a warning, when all are zero)."""
        if self.degenerate:
            warnings.warn(
                "all particle weights are zero; using uniform weights",
                DegenerateWeightsWarning,
                stacklevel=2,
            )
            return np.full(self.n, 1.0 / self.n)
        pos = np.isposinf(self.log_w)
        if pos.any():  # infinitely heavy particles share all the mass
            return pos / pos.sum()
        w = np.exp(self.log_w - logsumexp(self.log_w))
        return w / w.sum()

    def ess(self) -> float:
        """Effective sample size 1 / sum W_i^2, in [1, N] (N for degenerate weights)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DegenerateWeightsWarning)
            w = self.normalised()
        return float(1.0 / np.sum(w * w))

    def log_mean(self) -> float:
        """log((1/N) sum_i w_i); -inf when all weights are zero."""
        return logsumexp(self.log_w) - float(np.log(self.n))

    def log_mean_of(self, mask: NDArray[np.bool_]) -> float:
        """log of the mean weight over the particles selected by ``mask``."""
        k = int(mask.sum())
        return -np.inf if k == 0 else logsumexp(self.log_w[mask]) - float(np.log(k))
