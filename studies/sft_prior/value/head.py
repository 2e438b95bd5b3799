"""A small logistic head on the fine-tuned LLM's hidden states, its choices made on validation.

The head predicts success within the horizon from one pooled hidden vector (640 numbers for
Gemma-3-270M): ``p = sigmoid(w . (x - mu) / sd + b)``, standardised on the training states,
L2 penalty ``l2 / 2 * |w|^2`` on the mean log-loss, fitted full-batch by L-BFGS in float64 from
zeros (deterministic: no seed changes it). Which vector (``last<L>`` / ``mean<L>`` of a layer,
:func:`studies.sft_prior.value.reader.hidden_features`) and which ``l2`` are chosen on the
validation split -- tasks the head never trains on -- by the within-(task, step) AUC
(:func:`amc.value.metrics.within_group_auc`: siblings of one task at one step, the comparison
resampling makes), ties to the larger penalty; the held-out set is never looked at.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from amc.value.metrics import within_group_auc

L2_GRID = (1.0, 0.1, 0.01, 0.001)
"""Penalties tried (largest first: ties go to the simpler head)."""


@dataclass(frozen=True)
class LogisticHead:
    """A fitted head: standardiser and weights."""

    mu: np.ndarray
    sd: np.ndarray
    w: np.ndarray
    b: float
    feature: str = ""
    """Which pooled vector it reads (``last18``, ``mean9``...)."""
    l2: float = 0.0

    def predict(self, x: np.ndarray) -> np.ndarray:
        """P(success) of each row of ``x`` (n, hidden)."""
        z = ((np.asarray(x, float) - self.mu) / self.sd) @ self.w + self.b
        return 1.0 / (1.0 + np.exp(-z))


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float, max_iter: int = 200
                 ) -> LogisticHead:
    """The L2-penalised logistic regression of ``y`` (bool) on standardised ``x``."""
    import torch

    x = np.asarray(x, float)
    y = np.asarray(y, bool)
    if len(x) != len(y) or not len(x):
        raise ValueError("fit_logistic needs x and y of one non-zero length")
    mu, sd = x.mean(0), x.std(0)
    sd = np.where(sd > 1e-8, sd, 1.0)
    xs = torch.tensor((x - mu) / sd, dtype=torch.float64)
    yt = torch.tensor(y, dtype=torch.float64)
    w = torch.zeros(x.shape[1], dtype=torch.float64, requires_grad=True)
    b = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([w, b], max_iter=max_iter, line_search_fn="strong_wolfe",
                            tolerance_grad=1e-9, tolerance_change=1e-12)

    def closure() -> Any:
        opt.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(xs @ w + b, yt) \
            + 0.5 * l2 * (w * w).sum()
        loss.backward()
        return loss

    opt.step(closure)
    return LogisticHead(mu, sd, w.detach().numpy().copy(), float(b.detach()[0]), l2=l2)


def within_auc(p: np.ndarray, y: np.ndarray, groups: Sequence[Hashable]) -> float:
    """Within-(task, step) AUC of scores ``p``: the only AUC this study ranks heads by."""
    return within_group_auc(np.asarray(p, float), np.asarray(y, bool), groups)


def select_head(train: dict[str, np.ndarray], y_train: np.ndarray,
                val: dict[str, np.ndarray], y_val: np.ndarray,
                val_groups: Sequence[Hashable], l2_grid: Sequence[float] = L2_GRID
                ) -> tuple[LogisticHead, list[dict[str, Any]]]:
    """The head (feature, l2) with the largest validation within AUC, refitted on ``train``
    only, and every (feature, l2)'s validation AUC. Ties: the first feature in ``train``'s
    order, then the larger l2."""
    rows: list[dict[str, Any]] = []
    best: tuple[float, LogisticHead] | None = None
    for feature in train:
        for l2 in l2_grid:
            head = fit_logistic(train[feature], y_train, l2)
            auc = within_auc(head.predict(val[feature]), y_val, val_groups)
            rows.append({"feature": feature, "l2": l2, "val_auc_within": auc})
            score = auc if np.isfinite(auc) else -1.0
            if best is None or score > best[0] + 1e-12:
                best = (score, LogisticHead(head.mu, head.sd, head.w, head.b, feature, l2))
    assert best is not None  # train holds at least one feature
    return best[1], rows
