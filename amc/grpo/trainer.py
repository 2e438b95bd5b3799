"""The GRPO loop: rollouts, group advantages, clipped updates of LoRA weights, cost accounting.

One round: pick ``tasks_per_step`` training tasks (seeded), play G rollouts of each
(:func:`~.rollout.rollout_group`), turn the rollouts' rewards into group-relative advantages,
score every sampled turn under the sampling policy (``logp_old``) and the reference (adapter
off), then take ``iterations`` AdamW steps on :func:`~.loss.grpo_loss` over all turns
(micro-batched, gradients accumulated). Everything random comes from one numpy Generator
seeded by ``opts.seed`` (task picks, the per-turn torch sampling seeds) plus ``torch`` seeded
once for the LoRA initialisation.

Costs are measured, not estimated: wall seconds, process CPU seconds (all threads), GPU
seconds (wall time on a CUDA device), tokens generated and prompt tokens processed.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from amc.grpo.config import GRPOOptions
from amc.grpo.loss import group_advantages, grpo_loss
from amc.grpo.rollout import Policy, Rollout, Turn, rollout_group

ADAPTER_DIR = "adapter"
POLICY_FILE = "policy.json"


@dataclass
class Costs:
    """Training compute, accumulated over the run."""

    wall_s: float = 0.0
    cpu_s: float = 0.0
    gpu_s: float = 0.0
    generated_tokens: int = 0
    prompt_tokens: int = 0
    rollouts: int = 0


@dataclass
class TrainResult:
    """What a run produced: the per-step curve, costs and where the adapter is."""

    curve: list[dict[str, float]] = field(default_factory=list)
    costs: Costs = field(default_factory=Costs)
    adapter_dir: Path | None = None


def load_policy(opts: GRPOOptions) -> Policy:
    """The base model with fresh LoRA adapters (seeded), dropout off, on the chosen device."""
    from peft import LoraConfig, get_peft_model
    from trl.trainer.utils import disable_dropout_in_model

    from amc.priors.hf import load_base_lm

    base, tok, device = load_base_lm(opts.model, opts.device, opts.dtype, opts.seed)
    if opts.init_adapter is not None:
        from amc.priors.adapter import merge_adapters

        base = merge_adapters(base, opts.init_adapter, opts.tracking_uri)
    lora = LoraConfig(r=opts.lora_r, lora_alpha=opts.lora_alpha, lora_dropout=0.0,
                      target_modules=list(opts.lora_targets), task_type="CAUSAL_LM")
    model = get_peft_model(base, lora).to(device)
    disable_dropout_in_model(model)
    return Policy(model, tok, device)


def turn_logps(policy: Policy, turns: list[Turn], temperature: float
               ) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token log-probabilities of each turn's completion, (B, T), and its mask (B, T).

    Layout: prompts left-padded, completions right-padded to T, so the logits of the last
    T + 1 positions are all that is needed (the vocabulary projection dominates otherwise).
    """
    from trl.trainer.utils import selective_log_softmax

    pad = policy.tokenizer.pad_token_id
    width_p = max(len(t.prompt_ids) for t in turns)
    width_c = max(len(t.completion_ids) for t in turns)
    rows, attn, mask = [], [], []
    for t in turns:
        lp, lc = len(t.prompt_ids), len(t.completion_ids)
        rows.append([pad] * (width_p - lp) + t.prompt_ids + t.completion_ids
                    + [pad] * (width_c - lc))
        attn.append([0] * (width_p - lp) + [1] * (lp + lc) + [0] * (width_c - lc))
        mask.append([1] * lc + [0] * (width_c - lc))
    dev = policy.device
    ids, am = torch.tensor(rows, device=dev), torch.tensor(attn, device=dev)
    pos = (am.cumsum(-1) - 1).clamp(min=0)
    out = policy.model(input_ids=ids, attention_mask=am, position_ids=pos,
                       logits_to_keep=width_c + 1)
    logits = out.logits[:, :-1, :].float() / temperature  # position j predicts token j + 1
    logp = selective_log_softmax(logits, ids[:, -width_c:])
    return logp, torch.tensor(mask, device=dev, dtype=logp.dtype)


def _chunks(n: int, size: int) -> list[slice]:
    return [slice(i, min(i + size, n)) for i in range(0, n, size)]


def _score(policy: Policy, turns: list[Turn], opts: GRPOOptions, reference: bool
           ) -> list[torch.Tensor]:
    """No-grad log-probabilities per micro-batch, under the policy or the reference."""
    out = []
    with torch.no_grad():
        for sl in _chunks(len(turns), opts.micro_batch):
            if reference:
                with policy.model.disable_adapter():
                    out.append(turn_logps(policy, turns[sl], opts.temperature)[0])
            else:
                out.append(turn_logps(policy, turns[sl], opts.temperature)[0])
    return out


def update(policy: Policy, optimizer: torch.optim.Optimizer, turns: list[Turn],
           adv: torch.Tensor, opts: GRPOOptions) -> dict[str, float]:
    """``opts.iterations`` optimiser steps on one batch; the loss before each step is logged."""
    old = _score(policy, turns, opts, reference=False)
    ref = _score(policy, turns, opts, reference=True) if opts.beta > 0 else None
    losses, kls, clips = [], [], []
    for _ in range(opts.iterations):
        optimizer.zero_grad()
        total, kl, clip = 0.0, 0.0, 0.0
        for k, sl in enumerate(_chunks(len(turns), opts.micro_batch)):
            logp, mask = turn_logps(policy, turns[sl], opts.temperature)
            share = (sl.stop - sl.start) / len(turns)  # the loss is a mean over turns
            parts = grpo_loss(logp, old[k], None if ref is None else ref[k], adv[sl], mask,
                              beta=opts.beta, clip_eps=opts.clip_eps)
            (parts.loss * share).backward()
            total += float(parts.loss.detach()) * share
            kl += parts.kl * share
            clip += parts.clip_fraction * share
        optimizer.step()
        losses.append(total)
        kls.append(kl)
        clips.append(clip)
    return {"loss": losses[0], "loss_last": losses[-1], "kl": kls[-1], "clip_fraction": clips[-1]}


def _flatten(groups: list[list[Rollout]], adv: np.ndarray) -> tuple[list[Turn], torch.Tensor]:
    turns, a = [], []
    for gi, group in enumerate(groups):
        for ri, r in enumerate(group):
            turns += r.turns
            a += [float(adv[gi, ri])] * len(r.turns)
    return turns, torch.tensor(a)


def train(opts: GRPOOptions, policy: Policy | None = None, log: Any = None) -> TrainResult:
    """Run GRPO; writes the adapter, curve.jsonl and metrics.json under ``opts.out_dir``.

    ``log(step, row)`` is called after every round (e.g. to log MLflow metrics).
    """
    from tqdm.auto import tqdm

    from amc.registry import ENVIRONMENTS, load_builtin_components

    load_builtin_components()
    rng = np.random.default_rng(opts.seed)
    res = TrainResult()
    wall0, cpu0 = time.perf_counter(), time.process_time()
    policy = policy or load_policy(opts)
    suite = ENVIRONMENTS.build(opts.env, opts.env_options)
    try:
        pool = suite.task_ids(opts.split)[: opts.max_tasks]
        if not pool:
            raise ValueError(f"split {opts.split!r} of {opts.env} has no tasks")
        params = [p for p in policy.model.parameters() if p.requires_grad]
        optimizer = torch.optim.AdamW(params, lr=opts.lr, weight_decay=0.0)
        # one bar per round (rollouts + updates take minutes each on CPU); silent off a terminal
        bar = tqdm(range(opts.steps), desc="GRPO rounds", unit="round", disable=None)
        for step in bar:
            t0 = time.perf_counter()
            k = min(opts.tasks_per_step, len(pool))
            picked = [pool[i] for i in rng.choice(len(pool), size=k, replace=False)]
            policy.model.eval()
            groups = [rollout_group(policy, suite, tid, opts.group_size, opts, rng)
                      for tid in picked]
            rewards = np.array([[r.reward for r in g] for g in groups])
            turns, adv = _flatten(groups, group_advantages(rewards, opts.scale_advantages))
            policy.model.train()
            row = {"step": float(step), "mean_reward": float(rewards.mean()),
                   "reward_std": float(rewards.std(axis=1).mean()),
                   "turns": float(len(turns)), **update(policy, optimizer, turns, adv, opts)}
            gen = sum(r.generated_tokens for g in groups for r in g)
            res.costs.generated_tokens += gen
            res.costs.prompt_tokens += sum(r.prompt_tokens for g in groups for r in g)
            res.costs.rollouts += sum(len(g) for g in groups)
            row.update(generated_tokens=float(gen), wall_s=time.perf_counter() - t0)
            res.curve.append(row)
            bar.set_postfix(reward=f"{row['mean_reward']:.3f}", kl=f"{row.get('kl', 0.0):.4f}")
            if log is not None:
                log(step, row)
    finally:
        suite.close()
    res.costs.wall_s = time.perf_counter() - wall0
    res.costs.cpu_s = time.process_time() - cpu0
    res.costs.gpu_s = res.costs.wall_s if policy.device.type == "cuda" else 0.0
    policy.model.eval()
    res.adapter_dir = save(policy, opts, res)
    return res


def save(policy: Policy, opts: GRPOOptions, res: TrainResult) -> Path:
    """The adapter, its base model and options, the curve and the costs under out_dir."""
    out = Path(opts.out_dir)
    adapter = out / ADAPTER_DIR
    policy.model.save_pretrained(adapter)
    (adapter / POLICY_FILE).write_text(json.dumps(
        {"base_model": opts.model, "env": opts.env, "init_adapter": opts.init_adapter,
         "options": opts.model_dump(mode="json")},
        indent=2))
    with open(out / "curve.jsonl", "w") as f:
        for row in res.curve:
            f.write(json.dumps(row) + "\n")
    (out / "metrics.json").write_text(json.dumps(
        {"costs": vars(res.costs), "final": res.curve[-1] if res.curve else {}}, indent=2))
    return adapter
