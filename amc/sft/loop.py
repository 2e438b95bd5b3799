"""The SFT run: epochs of length-grouped batches, warm-up, checkpoints, resume, costs.

A run's identity is its options (less the output folder and tracking) plus the demonstrations'
hash: a resumed run with another identity is refused (its checkpoints would mix two runs).
Checkpoint ``k`` holds the adapter after ``k * checkpoint_every`` optimiser steps, the
held-out figures at that point and the trainer state to resume from.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from amc.sft.config import SFTOptions
from amc.sft.dagger import is_own_state
from amc.sft.trainer import Example, batches, evaluate, load_lora, loss_of, tokenize

CHECKPOINTS, FINAL, STATE = "checkpoints", "adapter", "state"
POLICY_FILE = "policy.json"


@dataclass
class SFTResult:
    """What a run produced."""

    curve: list[dict[str, float]] = field(default_factory=list)
    initial: dict[str, float] = field(default_factory=dict)
    """Held-out figures of the starting weights (``init_adapter``'s; empty for a fresh run)."""
    checkpoints: list[dict[str, Any]] = field(default_factory=list)
    costs: dict[str, float] = field(default_factory=dict)
    adapter_dir: Path | None = None


def run_identity(opts: SFTOptions, data_hash: str) -> str:
    """Hash of what decides the weights (not where they are written or tracked)."""
    keep = opts.model_dump(mode="json", exclude={"out_dir", "track", "tracking_uri",
                                                   "model_name", "threads"})
    if opts.init_adapter is not None:  # the starting weights, not only their path
        path = Path(opts.init_adapter) / "adapter_model.safetensors"
        keep["init_adapter"] = hashlib.sha256(path.read_bytes()).hexdigest() \
            if path.is_file() else opts.init_adapter
    text = json.dumps({"options": keep, "data": data_hash}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def split_holdout(demo_tasks: list[str], fraction: float, seed: int) -> set[str]:
    """The demonstration tasks whose pairs are only scored (seeded draw)."""
    tasks = sorted(set(demo_tasks))
    k = round(len(tasks) * fraction)
    if k == 0:
        return set()
    return {str(t) for t in np.random.default_rng([seed, 7]).choice(tasks, k, replace=False)}


def plan_steps(opts: SFTOptions, train: list[Example]) -> list[list[int]]:
    """The batch of every optimiser step: whole epochs in seeded orders, then a fraction."""
    steps: list[list[int]] = []
    epoch = 0
    per_epoch = len(batches(train, opts.batch_tokens, np.random.default_rng(0)))
    total = math.ceil(opts.epochs * per_epoch)
    while len(steps) < total:
        steps += batches(train, opts.batch_tokens, np.random.default_rng([opts.seed, epoch]))
        epoch += 1
    return steps[:total if opts.max_steps is None else min(total, opts.max_steps)]


def lr_at(opts: SFTOptions, step: int) -> float:
    """Linear warm-up to ``lr``, then constant."""
    return opts.lr * min(1.0, (step + 1) / max(opts.warmup_steps, 1))


def train(opts: SFTOptions, demos: list[Any], data_hash: str,
          log: Callable[[str], None] = print) -> SFTResult:
    """Train (or resume) under ``opts.out_dir``; returns the curve, checkpoints and costs."""
    if opts.threads:
        torch.set_num_threads(opts.threads)
    out = Path(opts.out_dir)
    ident = run_identity(opts, data_hash)
    model, tok, device = load_lora(opts)
    held = split_holdout([d.task_id for d in demos], opts.holdout_fraction, opts.seed)
    examples = tokenize(tok, demos)
    train_ex = [e for e, d in zip(examples, demos, strict=True) if d.task_id not in held]
    val_ex = [e for e, d in zip(examples, demos, strict=True) if d.task_id in held]
    own = [e for e, d in zip(examples, demos, strict=True)
           if d.task_id in held and is_own_state(d, opts)]
    if not train_ex:
        raise ValueError("no training pairs left after the held-out tasks")
    plan = plan_steps(opts, train_ex)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=opts.lr, weight_decay=0.0)
    res = SFTResult()
    start, spent = resume(out, ident, model, optimizer, res)
    pad = int(tok.pad_token_id)
    if start == 0 and opts.init_adapter is not None:
        res.initial = held_out(model, val_ex, own, pad, device, opts.batch_tokens)
    log(f"sft: {len(train_ex)} train pairs, {len(val_ex)} held-out pairs ({len(held)} tasks), "
        f"{len(plan)} steps; starting at step {start}")
    wall0, cpu0 = time.perf_counter() - spent["wall_s"], time.process_time() - spent["cpu_s"]
    tokens = int(spent["tokens"])
    if res.initial:
        log(f"sft start ({opts.init_adapter}): held-out greedy action accuracy "
            f"{res.initial['val_action_acc']:.3f}{own_note(res.initial)}")
    model.train()
    for step in range(start, len(plan)):
        ex = [train_ex[i] for i in plan[step]]
        for g in optimizer.param_groups:
            g["lr"] = lr_at(opts, step)
        optimizer.zero_grad()
        loss = loss_of(model, ex, pad, device)
        loss.backward()
        optimizer.step()
        tokens += sum(len(e.ids) for e in ex)
        row = {"step": float(step + 1), "loss": float(loss.detach()), "pairs": float(len(ex)),
               "wall_s": time.perf_counter() - wall0, "cpu_s": time.process_time() - cpu0,
               "tokens": float(tokens)}
        res.curve.append(row)
        last = step + 1 == len(plan)
        if (step + 1) % opts.checkpoint_every == 0 or last:
            row.update(held_out(model, val_ex, own, pad, device, opts.batch_tokens))
            checkpoint(out, ident, step + 1, model, optimizer, res, opts)
            log(f"sft step {step + 1}/{len(plan)}: loss {row['loss']:.3f}, held-out loss "
                f"{row.get('val_loss', float('nan')):.3f}, greedy action accuracy "
                f"{row.get('val_action_acc', float('nan')):.3f}{own_note(row)} "
                f"({row['wall_s']:.0f} s)")
    res.costs = {k: res.curve[-1][k] for k in ("wall_s", "cpu_s", "tokens")} if res.curve \
        else dict(spent)
    res.adapter_dir = out / FINAL
    final = out / CHECKPOINTS / step_name(len(plan))
    if final.is_dir():
        shutil.copytree(final, res.adapter_dir, dirs_exist_ok=True)
    return res


def held_out(model: Any, val_ex: list[Example], own: list[Example], pad: int,
             device: torch.device, cap: int) -> dict[str, float]:
    """Held-out loss and greedy accuracy over all held-out pairs, and (``*_own``) over those
    labelling states a prior's own rollouts reached (DAgger pairs), when there are any."""
    row = evaluate(model, val_ex, pad, device, cap)
    if own:
        row.update({f"{k}_own": v for k, v in evaluate(model, own, pad, device, cap).items()})
    return row


def own_note(row: dict[str, float]) -> str:
    """The log line's own-state accuracy (empty without DAgger pairs)."""
    return f", on own states {row['val_action_acc_own']:.3f}" if "val_action_acc_own" in row \
        else ""


def step_name(step: int) -> str:
    return f"step-{step:06d}"


def checkpoint(out: Path, ident: str, step: int, model: Any, optimizer: Any, res: SFTResult,
               opts: SFTOptions) -> None:
    """The adapter at ``step`` (kept), then the resumable state (replaced atomically)."""
    folder = out / CHECKPOINTS / step_name(step)
    model.save_pretrained(folder)
    row = res.curve[-1]
    (folder / POLICY_FILE).write_text(json.dumps(
        {"base_model": opts.model, "env": opts.env, "step": step,
         "prior_options": opts.prior_options(),
         "val_loss": row.get("val_loss"), "val_action_acc": row.get("val_action_acc"),
         **{k: v for k, v in row.items() if k.endswith("_own")}}, indent=2))
    res.checkpoints.append({"step": step, "path": str(folder), **{
        k: v for k, v in row.items() if k.startswith("val_")}})
    tmp = out / (STATE + ".part")
    tmp.mkdir(parents=True, exist_ok=True)
    torch.save({"identity": ident, "step": step, "optimizer": optimizer.state_dict(),
                "trainable": {k: v for k, v in model.state_dict().items() if "lora_" in k},
                "curve": res.curve, "checkpoints": res.checkpoints, "initial": res.initial},
               tmp / "trainer.pt")
    final = out / STATE
    if final.exists():
        shutil.rmtree(final)
    tmp.rename(final)


def resume(out: Path, ident: str, model: Any, optimizer: Any, res: SFTResult
           ) -> tuple[int, dict[str, float]]:
    """The step to start from and the costs already spent (0 and zeros for a fresh run)."""
    path = out / STATE / "trainer.pt"
    zero = {"wall_s": 0.0, "cpu_s": 0.0, "tokens": 0.0}
    if not path.is_file():
        return 0, zero
    state = torch.load(path, weights_only=False)
    if state["identity"] != ident:
        raise ValueError(f"{out} holds another SFT run (options or demonstrations changed); "
                         "give another out_dir or remove it")
    model.load_state_dict(state["trainable"], strict=False)
    optimizer.load_state_dict(state["optimizer"])
    res.curve, res.checkpoints = state["curve"], state["checkpoints"]
    res.initial = state.get("initial", {})
    last = res.curve[-1] if res.curve else {}
    return int(state["step"]), {k: float(last.get(k, 0.0)) for k in zero}
