"""The SFT loop: LoRA on the embedded model, cross-entropy on the action tokens only, resumable.

Pairs are tokenised as the prior will see them (the prompt alone, with its BOS, then the
completion's tokens without one), grouped by length into batches of at most ``batch_tokens``
padded tokens, and visited in a seeded order per epoch. The loss is the mean negative
log-likelihood of the *completion* tokens: the decoder runs over the whole right-padded batch,
but only the hidden states that predict a completion token go through the vocabulary projection
(Gemma-3's 262k-token head would otherwise cost as much as the rest of the model).

Every ``checkpoint_every`` optimiser steps the adapter is kept under ``checkpoints/step-NNNNNN``
with the held-out tasks' loss and greedy action accuracy (teacher-forced argmax equal to every
completion token: what greedy decoding would write). The trainer's state (adapter, optimiser,
step) is saved with each checkpoint, so a killed run resumes from its last checkpoint with the
same batch order. Costs are measured: wall and process CPU seconds, tokens seen.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from amc.sft.config import SFTOptions
from amc.sft.demos import Demo

IGNORE = -100


@dataclass(frozen=True)
class Example:
    """One tokenised pair."""

    ids: list[int]
    n_prompt: int
    """The first ``n_prompt`` ids are the prompt (no loss)."""


def tokenize(tok: Any, demos: list[Demo]) -> list[Example]:
    """Prompt ids (as the prior encodes them) followed by the completion's ids."""
    out = []
    for d in demos:
        p = tok(d.prompt)["input_ids"]
        c = tok(d.completion, add_special_tokens=False)["input_ids"]
        out.append(Example(list(p) + list(c), len(p)))
    return out


def batches(examples: list[Example], cap: int, rng: np.random.Generator) -> list[list[int]]:
    """Index batches of similar length, at most ``cap`` padded tokens each, in seeded order."""
    order = sorted(range(len(examples)), key=lambda i: (len(examples[i].ids), i))
    out: list[list[int]] = []
    cur: list[int] = []
    for i in order:
        width = len(examples[i].ids)  # the longest so far: sorted ascending
        if cur and width * (len(cur) + 1) > cap:
            out.append(cur)
            cur = []
        cur.append(i)
    if cur:
        out.append(cur)
    return [out[j] for j in rng.permutation(len(out))]


def collate(examples: list[Example], pad: int, device: torch.device
            ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Right-padded ids (B, L), attention mask (B, L) and labels (B, L) (IGNORE off-target)."""
    width = max(len(e.ids) for e in examples)
    ids = torch.full((len(examples), width), pad, dtype=torch.long)
    mask = torch.zeros((len(examples), width), dtype=torch.long)
    labels = torch.full((len(examples), width), IGNORE, dtype=torch.long)
    for r, e in enumerate(examples):
        n = len(e.ids)
        ids[r, :n] = torch.tensor(e.ids)
        mask[r, :n] = 1
        labels[r, e.n_prompt:n] = torch.tensor(e.ids[e.n_prompt:])
    return ids.to(device), mask.to(device), labels.to(device)


def completion_logits(model: Any, ids: torch.Tensor, mask: torch.Tensor, labels: torch.Tensor
                      ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Logits (M, V) at the M positions that predict a labelled token, the targets (M,) and
    each position's row (M,). Position j predicts token j + 1."""
    inner, head = decoder_and_head(model)
    hidden = inner(input_ids=ids, attention_mask=mask).last_hidden_state  # (B, L, H)
    target = labels[:, 1:]  # (B, L - 1)
    rows, cols = (target != IGNORE).nonzero(as_tuple=True)
    logits = head(hidden[rows, cols]).float()  # (M, V)
    return logits, target[rows, cols], rows


def decoder_and_head(model: Any) -> tuple[Any, Any]:
    """The causal LM's decoder stack and vocabulary projection (through a peft wrapper)."""
    lm = model.get_base_model() if hasattr(model, "get_base_model") else model
    return lm.model, lm.lm_head


def loss_of(model: Any, ex: list[Example], pad: int, device: torch.device) -> torch.Tensor:
    """Mean NLL over the batch's completion tokens."""
    logits, target, _ = completion_logits(model, *collate(ex, pad, device))
    return torch.nn.functional.cross_entropy(logits, target)


@torch.no_grad()
def evaluate(model: Any, examples: list[Example], pad: int, device: torch.device,
             cap: int) -> dict[str, float]:
    """Held-out completion NLL per token and greedy action accuracy (all tokens argmax)."""
    if not examples:
        return {}
    model.eval()
    nll, tokens, exact = 0.0, 0, 0
    for b in batches(examples, cap, np.random.default_rng(0)):
        ex = [examples[i] for i in b]
        logits, target, rows = completion_logits(model, *collate(ex, pad, device))
        nll += float(torch.nn.functional.cross_entropy(logits, target, reduction="sum"))
        tokens += int(target.numel())
        wrong = torch.zeros(len(ex), dtype=torch.long, device=logits.device)
        wrong.index_add_(0, rows, (logits.argmax(-1) != target).long())
        exact += int((wrong == 0).sum())
    model.train()
    return {"val_loss": nll / tokens, "val_action_acc": exact / len(examples)}


def load_adapter_weights(model: Any, folder: Path) -> None:
    """Copy a saved adapter's LoRA weights into ``model``; refuse one that does not cover
    exactly the model's adapters with the same shapes (another rank, targets or layers)."""
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file

    path = folder / "adapter_model.safetensors"
    if not path.is_file():
        raise FileNotFoundError(f"init_adapter: {path} not found")
    saved = load_file(str(path))
    # peft saves keys without the adapter's name ("lora_A.weight", not "lora_A.default.weight")
    own = {k.replace(".default.", "."): v for k, v in model.state_dict().items() if "lora_" in k}
    if set(saved) != set(own) or any(saved[k].shape != own[k].shape for k in own):
        raise ValueError(f"init_adapter {folder}: its {len(saved)} LoRA tensors do not match "
                         f"the run's {len(own)} (rank, lora_targets and lora_top_layers must "
                         "be the adapter's)")
    set_peft_model_state_dict(model, saved)
    now = {k.replace(".default.", "."): v for k, v in model.state_dict().items() if "lora_" in k}
    if any(not torch.equal(now[k], saved[k].to(now[k].dtype)) for k in saved):
        raise ValueError(f"init_adapter {folder}: its weights did not load")


def load_lora(opts: SFTOptions) -> tuple[Any, Any, torch.device]:
    """The base model with LoRA adapters on the chosen layers: seeded fresh ones, or
    ``init_adapter``'s weights."""
    from peft import LoraConfig, get_peft_model

    from amc.priors.hf import load_base_lm

    base, tok, device = load_base_lm(opts.model, opts.device, opts.dtype, opts.seed)
    n_layers = int(base.config.num_hidden_layers)
    k = n_layers if opts.lora_top_layers is None else min(opts.lora_top_layers, n_layers)
    lora = LoraConfig(r=opts.lora_r, lora_alpha=opts.lora_alpha, lora_dropout=0.0,
                      target_modules=list(opts.lora_targets), task_type="CAUSAL_LM",
                      layers_to_transform=list(range(n_layers - k, n_layers)))
    model = get_peft_model(base, lora).to(device)
    if opts.init_adapter is not None:
        load_adapter_weights(model, Path(opts.init_adapter))
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    return model, tok, device
