"""An ensemble of value heads: K members trained alike but for their seed, p averaged.

A head trained on frozen-encoder features (:mod:`amc.value.train_head`) depends on its seed
through the head's initialisation and the shuffling of the batches. Training K members with K
distinct seeds on the same features and averaging their predictions reduces that variance (a
deep ensemble, Lakshminarayanan et al., NeurIPS 2017) at K times the head's training cost --
the embedding, the expensive part on a CPU, is shared.

Members are combined by the mean of their success probabilities p, not of their logits: the
mean of p is the mixture's probability of success (each member a guess at the same Bernoulli),
so it stays a probability the calibration and the log-loss read as such, and one over-confident
member (p near 0 or 1, a logit near -/+ infinity) cannot dominate the average the way it
dominates a mean of logits. A monotone calibration is then fitted on the averaged p.

:func:`train_members` and :func:`mean_p` are pure (any per-seed fitting function);
:func:`head_member` is the fitting function of a MiniLM head on cached features.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from amc.value.train_head import SplitFeatures
    from amc.value.train_run import TrainConfig

Predictor = Callable[[np.ndarray], np.ndarray]
"""Features (n, d) -> success probabilities p, shape (n,)."""
Fit = Callable[[int], Predictor]
"""Seed -> a member trained with that seed."""


def member_seeds(base: int, k: int) -> list[int]:
    """The K distinct seeds ``base, base + 1, ..., base + k - 1`` (member 0 = the base seed)."""
    if k < 1:
        raise ValueError(f"an ensemble needs at least one member (k = {k})")
    return [base + i for i in range(k)]


def mean_p(member_p: Sequence[np.ndarray]) -> np.ndarray:
    """The mean over members of their p (probabilities in [0, 1], one array per member)."""
    if not member_p:
        raise ValueError("mean_p needs at least one member's predictions")
    stack = np.stack([np.asarray(p, float) for p in member_p])
    if ((stack < 0) | (stack > 1)).any():
        raise ValueError("members' predictions must be probabilities in [0, 1]")
    return np.asarray(stack.mean(axis=0))


@dataclass
class Ensemble:
    """Trained members, their seeds and each member's training wall seconds."""

    members: list[Predictor]
    seeds: list[int]
    seconds: list[float]

    def member_predictions(self, x: np.ndarray) -> list[np.ndarray]:
        """Each member's p on features ``x``."""
        return [np.asarray(m(x), float) for m in self.members]

    def predict(self, x: np.ndarray) -> np.ndarray:
        """The ensemble's p: :func:`mean_p` of the members' predictions."""
        return mean_p(self.member_predictions(x))


def train_members(fit: Fit, seeds: Sequence[int]) -> Ensemble:
    """Train one member per seed with ``fit`` (seeds must be distinct), timing each."""
    import time

    if len(set(seeds)) != len(seeds):
        raise ValueError(f"ensemble seeds must be distinct: {list(seeds)}")
    members, seconds = [], []
    for s in seeds:
        t0 = time.perf_counter()
        members.append(fit(s))
        seconds.append(time.perf_counter() - t0)
    return Ensemble(members, list(seeds), seconds)


def head_member(train: SplitFeatures, val: SplitFeatures, cfg: TrainConfig) -> Fit:
    """The fitting function of a head on cached features: ``seed`` -> the head that
    :func:`amc.value.train_head.train_head` trains with ``cfg`` at that seed (same
    initialisation, shuffling and early stopping), as a predictor of p on raw features."""
    from amc.value.train_head import fit_head, frozen_model, head_predict

    def fit(seed: int) -> Predictor:
        member_cfg = cfg.model_copy(update={"seed": seed})
        model = frozen_model(member_cfg)
        fit_head(model, train, val, member_cfg, progress=False)
        return lambda x: head_predict(model, x)

    return fit
