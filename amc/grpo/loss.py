"""GRPO advantages and loss: pure tensor maths, no model and no I/O.

Shapes: a batch holds B sampled turns (one prompt and one completion each), padded to T
completion tokens; ``mask`` (B, T) is 1 on real completion tokens. Every turn of a rollout
carries that rollout's advantage, so a whole trajectory is reinforced or discouraged together.

The loss of one token is the clipped surrogate of PPO/GRPO,
``-min(r A, clip(r, 1 - eps, 1 + eps) A)`` with ``r = exp(logp - logp_old)``, plus
``beta * KL`` where KL is the unbiased, always non-negative estimator
``exp(ref - logp) - (ref - logp) - 1`` of KL(policy || reference). Token losses are averaged
within a turn, then over turns (the original GRPO aggregation).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch


def group_advantages(rewards: np.ndarray, scale: bool = True, eps: float = 1e-6) -> np.ndarray:
    """Group-relative advantages of rollout rewards, (tasks, G) -> (tasks, G).

    Reward minus the group mean, divided by the group's standard deviation when ``scale`` (a
    group whose rollouts all scored the same gets advantage 0: it carries no signal).
    """
    r = np.asarray(rewards, dtype=np.float64)
    if r.ndim != 2 or r.shape[1] < 2:
        raise ValueError(f"rewards must be (tasks, G) with G >= 2, got shape {r.shape}")
    centred = r - r.mean(axis=1, keepdims=True)
    if not scale:
        return centred
    return centred / (r.std(axis=1, keepdims=True) + eps)


@dataclass(frozen=True)
class LossParts:
    """The scalar loss and its parts (detached parts are for logging)."""

    loss: torch.Tensor
    """Differentiable total: surrogate + beta * KL."""
    kl: float
    """Mean per-token KL(policy || reference) estimate."""
    clip_fraction: float
    """Share of tokens whose ratio was clipped."""


def _masked_turn_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over each turn's real tokens, then over turns: (B, T) -> ()."""
    per_turn = (x * mask).sum(-1) / mask.sum(-1).clamp(min=1)
    return per_turn.mean()


def grpo_loss(logp: torch.Tensor, logp_old: torch.Tensor, logp_ref: torch.Tensor | None,
              advantages: torch.Tensor, mask: torch.Tensor, *, beta: float = 0.04,
              clip_eps: float = 0.2) -> LossParts:
    """The GRPO loss of a batch of turns.

    Args:
        logp: (B, T) log-probabilities of the sampled tokens under the policy (with grad).
        logp_old: (B, T) the same under the policy that sampled them (no grad).
        logp_ref: (B, T) the same under the reference model, or None when ``beta == 0``.
        advantages: (B,) the rollout advantage of each turn.
        mask: (B, T) 1 on real completion tokens, 0 on padding.
    """
    if logp.shape != mask.shape or logp_old.shape != mask.shape:
        raise ValueError(f"logp {tuple(logp.shape)} and mask {tuple(mask.shape)} differ")
    if beta > 0 and logp_ref is None:
        raise ValueError("beta > 0 needs the reference log-probabilities")
    mask = mask.to(logp.dtype)
    ratio = torch.exp(logp - logp_old)
    adv = advantages.to(logp.dtype)[:, None]
    clipped = torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps)
    token_loss = -torch.min(ratio * adv, clipped * adv)
    kl = torch.zeros_like(logp)
    if logp_ref is not None:
        d = logp_ref - logp
        kl = torch.exp(d) - d - 1
    loss = _masked_turn_mean(token_loss + beta * kl, mask)
    n = mask.sum().clamp(min=1)
    clip_frac = (((ratio - clipped).abs() > 0).to(logp.dtype) * mask).sum() / n
    kl_mean = (kl.detach() * mask).sum() / n
    return LossParts(loss=loss, kl=float(kl_mean), clip_fraction=float(clip_frac))
