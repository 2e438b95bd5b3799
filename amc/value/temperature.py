"""A resampling temperature fitted on validation instead of a hand-chosen beta.

At a resampling step the particles of one run are weighted ``exp(V_i / beta)`` (the common
``f(s_t0)`` of the first resampling step cancels; ``V = f + r``). Read as a distribution,
``softmax_g(V / T)`` is the model's claim of *which* sibling of group g succeeds. The temperature
that makes this claim calibrated minimises the within-group softmax cross-entropy

    L(T) = mean over mixed groups g of  - sum_i p_i log softmax_g(V / T)_i,   p = y / sum_g y

(``y`` = success; a *mixed* group holds a success and a failure: all-fail groups have no
target, all-success groups say nothing about ranking). A value whose sibling differences are
tiny (spread 0.01 at beta 0.1: a weight ratio of 1.1) gets a small fitted T, one that
over-claims gets a large one; an uninformative value (constant within groups, or ranking at
chance) is fitted at the upper bound: uniform resampling. ``L`` at the fitted T beside the
uniform ``mean log n_g`` says how much the value knows about which sibling wins.

The fit is one-dimensional (bounded search over log T, :func:`scipy.optimize.minimize_scalar`),
deterministic, and stored with the model (head mode: ``resample_temperature`` in its metrics,
read back by :func:`stored_temperature`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pydantic import Field, model_validator

from amc.config import Frozen


class TemperatureConfig(Frozen):
    """Fitting the resampling temperature on the validation split after training."""

    fit: bool = False
    """Fit T on validation and store it with the model (``resample_temperature``)."""
    min_temperature: float = Field(1e-3, gt=0)
    """Lower end of the search interval of T (value units)."""
    max_temperature: float = Field(10.0, gt=0)
    """Upper end of the search; a fit here means the value does not rank (uniform)."""

    @model_validator(mode="after")
    def _ordered(self) -> TemperatureConfig:
        if self.min_temperature >= self.max_temperature:
            raise ValueError("temperature: min_temperature must be below max_temperature")
        return self


@dataclass(frozen=True)
class Groups:
    """The mixed groups of a split: per group, its values and success-probability targets."""

    values: tuple[np.ndarray, ...]
    targets: tuple[np.ndarray, ...]

    def __len__(self) -> int:
        return len(self.values)

    @classmethod
    def of(cls, values: Sequence[float] | np.ndarray, success: Sequence[bool] | np.ndarray,
           groups: Sequence[Hashable]) -> Groups:
        """Group states by label; keep the mixed groups (a success and a failure)."""
        v, y = np.asarray(values, float), np.asarray(success, float)
        if not (len(v) == len(y) == len(groups)):
            raise ValueError("values, success and groups must have equal length")
        idx: dict[Hashable, list[int]] = {}
        for i, g in enumerate(groups):
            idx.setdefault(g, []).append(i)
        vs, ts = [], []
        for members in idx.values():
            yg = y[members]
            if 0 < yg.sum() < len(members):
                vs.append(v[members])
                ts.append(yg / yg.sum())
        return cls(tuple(vs), tuple(ts))

    def log_loss(self, temperature: float) -> float:
        """Mean within-group softmax cross-entropy at ``temperature`` (inf: uniform; NaN when
        there is no mixed group)."""
        if not len(self):
            return float("nan")
        total = 0.0
        for v, p in zip(self.values, self.targets, strict=True):
            if math.isinf(temperature):
                total += math.log(len(v))
                continue
            z = v / temperature
            z = z - z.max()
            total -= float(p @ (z - math.log(np.exp(z).sum())))
        return total / len(self)


@dataclass(frozen=True)
class TemperatureFit:
    """A fitted temperature and what it achieves."""

    temperature: float
    log_loss: float
    """Within-group log-loss at the fitted T."""
    uniform_log_loss: float
    """The same for uniform resampling (T = infinity): mean log(group size)."""
    groups: int
    """Mixed groups the fit used."""
    at_bound: bool
    """The fit ended at an end of the interval (upper: the value does not rank siblings)."""


def fit_temperature(values: Sequence[float] | np.ndarray, success: Sequence[bool] | np.ndarray,
                    groups: Sequence[Hashable], cfg: TemperatureConfig = TemperatureConfig()
                    ) -> TemperatureFit:
    """The T in ``[min_temperature, max_temperature]`` minimising the within-group log-loss."""
    from scipy.optimize import minimize_scalar

    g = Groups.of(values, success, groups)
    if not len(g):
        raise ValueError("fit_temperature: no group holds both a success and a failure")
    lo, hi = math.log(cfg.min_temperature), math.log(cfg.max_temperature)
    res = minimize_scalar(lambda s: g.log_loss(math.exp(s)), bounds=(lo, hi), method="bounded",
                          options={"xatol": 1e-4})
    s = float(res.x)
    # the bounded search never evaluates the ends exactly: compare them too; ties (a value
    # constant within every group) go to the upper end, uniform resampling
    best = min(((g.log_loss(math.exp(x)), -x) for x in (s, lo, hi)),
               key=lambda lx: (round(lx[0], 12), lx[1]))
    s = -best[1]
    at_bound = min(s - lo, hi - s) < 1e-3
    return TemperatureFit(math.exp(s), best[0], g.log_loss(math.inf), len(g), at_bound)


def stored_temperature(model_dir: str | Path) -> float | None:
    """The resampling temperature a trained model directory carries (its saved metrics'
    ``resample_temperature``), or None when it was trained without the fit."""
    from amc.value.model import CONFIG_FILE

    meta = json.loads((Path(model_dir) / CONFIG_FILE).read_text())
    t = (meta.get("metrics") or {}).get("resample_temperature")
    return None if t is None else float(t)


def weight_ratio(spread: float, beta: float) -> float:
    """Resampling weight of a state one within-group spread above its siblings' mean, relative
    to the mean: ``exp(spread / beta)``."""
    return math.exp(spread / beta)
