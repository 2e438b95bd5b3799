"""Calibration of a success-probability value, fitted on held-out states instead of a knob.

At small beta the SMC weights go as p(s), so a doomed state scored 0.09 keeps a third of the
weight of a live one at 0.3: how the low end of p is calibrated decides whether doomed particles
survive resampling. The sweep's hand-chosen exponent p -> p^k (chosen after a first result)
is replaced by a monotone map fitted on the value's validation states against their binary
outcome (success of the trajectory from that state):

- ``platt``: p' = sigmoid(a logit(p) + b), a >= 0 (temperature and bias; a = exp(alpha) keeps
  it monotone), fitted by log-loss (Platt, 1999; temperature scaling, Guo et al., ICML 2017);
- ``isotonic``: the non-decreasing step function of least squares (pool-adjacent-violators),
  linearly interpolated between the fitted points and clipped to [0, 1] (Zadrozny and Elkan,
  KDD 2002);
- ``power``: p' = p^k with k fitted by log-loss (the old exponent, chosen by the same rule).

All maps are monotone non-decreasing, so within-task ranking (AUC) is kept; only the scale
changes. A :class:`Calibration` is plain data (``to_dict`` / ``from_dict``), saved beside the
model. Pure numpy/scipy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from scipy.optimize import minimize, minimize_scalar

Method = Literal["none", "platt", "isotonic", "power"]
EPS = 1e-6


def _logit(p: np.ndarray) -> np.ndarray:
    q = np.clip(p, EPS, 1 - EPS)
    return np.log(q) - np.log1p(-q)


def log_loss(p: np.ndarray, y: np.ndarray) -> float:
    """Mean negative log-likelihood of binary outcomes ``y`` under probabilities ``p``."""
    q = np.clip(np.asarray(p, float), EPS, 1 - EPS)
    yv = np.asarray(y, float)
    return float(-np.mean(yv * np.log(q) + (1 - yv) * np.log1p(-q)))


@dataclass(frozen=True)
class Calibration:
    """A fitted monotone map of p (``method`` and its parameters)."""

    method: Method = "none"
    params: dict[str, Any] = field(default_factory=dict)

    def __call__(self, p: Any) -> np.ndarray:
        x = np.clip(np.asarray(p, float), 0.0, 1.0)
        if self.method == "platt":
            z = self.params["a"] * _logit(x) + self.params["b"]
            return np.asarray(1 / (1 + np.exp(-z)))
        if self.method == "isotonic":
            return np.clip(np.interp(x, self.params["x"], self.params["y"]), 0.0, 1.0)
        if self.method == "power":
            return np.asarray(x ** self.params["k"])
        return x

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "params": self.params}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Calibration:
        return cls(d.get("method", "none"), dict(d.get("params", {})))


def fit_platt(p: np.ndarray, y: np.ndarray) -> Calibration:
    """sigmoid(a logit(p) + b), a = exp(alpha) > 0, by log-loss."""
    z, yv = _logit(np.asarray(p, float)), np.asarray(y, float)

    def nll(theta: np.ndarray) -> float:
        s = np.exp(theta[0]) * z + theta[1]
        return float(np.mean(np.logaddexp(0, s) - yv * s))

    res = minimize(nll, np.zeros(2), method="L-BFGS-B", bounds=[(-8, 8), (-30, 30)])
    return Calibration("platt", {"a": float(np.exp(res.x[0])), "b": float(res.x[1])})


def pav(y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Pool-adjacent-violators: the non-decreasing fit of ``y`` (in order) with weights ``w``."""
    vals: list[float] = []
    wts: list[float] = []
    sizes: list[int] = []
    for yi, wi in zip(y, w, strict=True):
        vals.append(float(yi))
        wts.append(float(wi))
        sizes.append(1)
        while len(vals) > 1 and vals[-2] > vals[-1]:
            w2 = wts[-2] + wts[-1]
            v2 = (vals[-2] * wts[-2] + vals[-1] * wts[-1]) / w2
            n2 = sizes[-2] + sizes[-1]
            del vals[-1], wts[-1], sizes[-1]
            vals[-1], wts[-1], sizes[-1] = v2, w2, n2
    return np.repeat(vals, sizes)


def fit_isotonic(p: np.ndarray, y: np.ndarray) -> Calibration:
    """The isotonic (non-decreasing) regression of y on p; knots at the distinct p values."""
    pv, yv = np.asarray(p, float), np.asarray(y, float)
    xs, inv = np.unique(pv, return_inverse=True)
    w = np.bincount(inv).astype(float)
    means = np.bincount(inv, weights=yv) / w
    fit = pav(means, w)
    return Calibration("isotonic", {"x": xs.tolist(), "y": fit.tolist()})


def fit_power(p: np.ndarray, y: np.ndarray) -> Calibration:
    """p^k, k in [0.05, 64], by log-loss."""
    pv, yv = np.clip(np.asarray(p, float), EPS, 1.0), np.asarray(y, float)
    res = minimize_scalar(lambda lk: log_loss(pv ** np.exp(lk), yv),
                          bounds=(np.log(0.05), np.log(64)), method="bounded")
    return Calibration("power", {"k": float(np.exp(res.x))})


def fit(method: Method, p: Any, y: Any) -> Calibration:
    """Fit ``method`` on held-out (prediction, outcome) pairs (``none``: the identity)."""
    pv, yv = np.asarray(p, float), np.asarray(y, float)
    if pv.shape != yv.shape or not pv.size:
        raise ValueError(f"calibration needs equal, non-empty p and y ({pv.shape}, {yv.shape})")
    if method == "none":
        return Calibration()
    fitters = {"platt": fit_platt, "isotonic": fit_isotonic, "power": fit_power}
    return fitters[method](pv, yv)
