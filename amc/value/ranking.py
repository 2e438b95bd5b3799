"""Within-(task, step) objectives: train the value to rank siblings, not only to regress.

Resampling compares the particles of one task at one step: only the differences of the value
between siblings move the weights (``exp((f_i - f_j) / beta)``). Plain regression on pooled
targets spends its capacity where most target variance lies -- between tasks and steps (task
difficulty, how far the episode is) -- and can rank siblings at chance. Each objective here is

    loss = regression_weight * regression loss + weight * within-group term

over batches made of whole groups (:func:`group_batches`), where a group is the states of one
(task, step). The within-group terms (raw head outputs ``f``, targets ``y``, ``s = scale``):

- ``pairwise`` (Bradley-Terry / RankNet): mean over same-group pairs with ``y_i > y_j`` of
  ``softplus(-(f_i - f_j) / s)``, the log-loss of "i beats j" with P = sigmoid((f_i - f_j) / s);
  comparative ranking as in PQM (Li and Li, ICLR 2025) and contrastive twist learning (Zhao et
  al. 2024);
- ``listwise`` (ListNet): per group with mixed targets, the cross-entropy between
  ``y / sum(y)`` and ``softmax(f / s)``: the log-loss of *which* sibling succeeds -- the
  distribution resampling draws from when ``s`` is beta;
- ``centred`` (advantage targets): mean of ``((f_i - mean_g f) - (y_i - mean_g y))^2``, the
  regression of group-centred values on group-centred targets (advantage / progress targets:
  Setlur et al. 2024, PAV). Plain MSE is exactly (within part + between part) of the batch, so
  this term re-weights the within part.

``kind = "regression"`` (the default) is the plain loss alone, batches as before; keeping
``regression_weight > 0`` keeps the value's level (calibration, ``V = f + r``, selection), which
a ranking term alone leaves free. Pure functions of tensors; the trainer wires them in.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Sequence
from typing import TYPE_CHECKING, Literal

import numpy as np
from pydantic import Field, model_validator

from amc.config import Frozen

if TYPE_CHECKING:  # torch is imported where a loss runs: params validate ObjectiveConfig
    import torch  # in the core install, which has no torch

Kind = Literal["regression", "pairwise", "listwise", "centred"]


class ObjectiveConfig(Frozen):
    """The value head's training objective (head mode, :mod:`amc.value.train_head`)."""

    kind: Kind = "regression"
    """regression: the model's loss only (default: unchanged behaviour); pairwise, listwise,
    centred: that loss plus the within-(task, step) term of the same name (module docstring)."""
    weight: float = Field(1.0, ge=0)
    """Weight of the within-group term (unused with kind regression)."""
    regression_weight: float = Field(1.0, ge=0)
    """Weight of the regression loss beside the within-group term (0: that term alone; unused
    with kind regression)."""
    scale: float = Field(0.1, gt=0)
    """s of pairwise/listwise: differences are read as (f_i - f_j) / s; 0.1 = the default
    SMC beta, so the term trains differences on the scale resampling reads them."""
    groups_per_batch: int = Field(16, ge=1)
    """Whole (task, step) groups per training batch (non-regression kinds)."""
    select_on: Literal["pearson", "auc_within"] = "pearson"
    """Validation metric whose best epoch is kept (early stopping): pooled Pearson (default),
    or the within-(task, step) AUC that ranking siblings is for."""

    @model_validator(mode="after")
    def _some_loss(self) -> ObjectiveConfig:
        if self.kind != "regression" and self.weight == 0 and self.regression_weight == 0:
            raise ValueError("objective: weight and regression_weight are both 0 (no loss)")
        return self


def group_ids(groups: Sequence[Hashable]) -> np.ndarray:
    """Dense integer ids (first-seen order) of hashable group labels, shape (n,)."""
    seen: dict[Hashable, int] = {}
    return np.array([seen.setdefault(g, len(seen)) for g in groups], dtype=np.int64)


def group_batches(gid: np.ndarray, groups_per_batch: int,
                  generator: torch.Generator) -> Iterator[torch.Tensor]:
    """Index batches of ``groups_per_batch`` whole groups, groups in a seeded random order."""
    import torch

    order = torch.randperm(int(gid.max()) + 1 if len(gid) else 0, generator=generator).numpy()
    members: list[list[int]] = [[] for _ in range(len(order))]
    for i, g in enumerate(gid.tolist()):
        members[g].append(i)
    for b in range(0, len(order), groups_per_batch):
        idx = [i for g in order[b: b + groups_per_batch] for i in members[g]]
        yield torch.tensor(idx, dtype=torch.long)


def _same(gid: torch.Tensor) -> torch.Tensor:
    return gid[:, None] == gid[None, :]


def pairwise_loss(f: torch.Tensor, y: torch.Tensor, gid: torch.Tensor,
                  scale: float) -> torch.Tensor:
    """Mean logistic loss over same-group pairs with ``y_i > y_j`` (0 when there are none)."""
    import torch

    mask = _same(gid) & (y[:, None] > y[None, :])
    if not bool(mask.any()):
        return f.sum() * 0.0
    d = (f[:, None] - f[None, :]) / scale
    return torch.nn.functional.softplus(-d)[mask].mean()


def listwise_loss(f: torch.Tensor, y: torch.Tensor, gid: torch.Tensor,
                  scale: float) -> torch.Tensor:
    """Mean over mixed groups (targets not all equal, all >= 0, sum > 0) of the cross-entropy
    between ``y / sum_g y`` and ``softmax_g(f / scale)`` (0 when no group is mixed)."""
    import torch

    same = _same(gid)
    z = (f / scale)[None, :].expand_as(same).masked_fill(~same, float("-inf"))
    log_p = f / scale - torch.logsumexp(z, dim=1)
    y = y.clamp(min=0)
    total = (same.to(y.dtype) @ y)
    hi = torch.where(same, y[None, :], -torch.inf).amax(1)
    lo = torch.where(same, y[None, :], torch.inf).amin(1)
    mixed = (total > 0) & (hi > lo)
    if not bool(mixed.any()):
        return f.sum() * 0.0
    p = torch.where(mixed, y / total.clamp(min=1e-12), torch.zeros_like(y))
    n_groups = torch.unique(gid[mixed]).numel()
    return -(p * log_p).sum() / n_groups


def centred_loss(f: torch.Tensor, y: torch.Tensor, gid: torch.Tensor) -> torch.Tensor:
    """Mean squared error of group-centred values against group-centred targets."""
    same = _same(gid).to(f.dtype)
    n = same.sum(1)
    fc = f - (same @ f) / n
    yc = y - (same @ y) / n
    return ((fc - yc) ** 2).mean()


def within_term(cfg: ObjectiveConfig, f: torch.Tensor, y: torch.Tensor,
                gid: torch.Tensor) -> torch.Tensor:
    """The configured within-group term of a batch of whole groups (raw outputs ``f``)."""
    f, y = f.float(), y.float()
    if cfg.kind == "pairwise":
        return pairwise_loss(f, y, gid, cfg.scale)
    if cfg.kind == "listwise":
        return listwise_loss(f, y, gid, cfg.scale)
    if cfg.kind == "centred":
        return centred_loss(f, y, gid)
    raise ValueError(f"objective kind {cfg.kind!r} has no within-group term")


def objective_loss(cfg: ObjectiveConfig, regression: torch.Tensor, f: torch.Tensor,
                   y: torch.Tensor, gid: torch.Tensor) -> torch.Tensor:
    """``regression_weight * regression + weight * within-group term`` (regression: as is)."""
    if cfg.kind == "regression":
        return regression
    return cfg.regression_weight * regression + cfg.weight * within_term(cfg, f, y, gid)
