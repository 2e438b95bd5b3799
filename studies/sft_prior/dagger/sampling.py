"""Exploratory: how often does the prior, *sampling*, write the planner's action?

Held-out greedy accuracy on the prior's own states rose from 0.075 to 0.338 in the DAgger
round, but on-policy agreement in the search's rollouts only from 0.146 to 0.168
(evidence/sft-prior/failure-modes.md). The rollouts sample (temperature 1, top-k 40, top-p
0.95), so this reads, on the same held-out pairs as the SFT tables, the probability that one
sampled completion is exactly the planner's -- the product over its tokens of the truncated,
renormalised sampling probabilities -- at the search's temperature and at lower ones. Nothing
here is a declared result: it says which decoding lever a next declared search could include.

    python -m studies.sft_prior.dagger.sampling
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
import yaml

from amc.config import validate
from amc.sft.config import SFTOptions
from amc.sft.dagger import is_own_state
from amc.sft.demos import read_demos
from amc.sft.loop import split_holdout
from amc.sft.trainer import batches, collate, completion_logits, load_lora, tokenize

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
OUT = REPO / "evidence/sft-prior/dagger/sampling.md"
CHECKPOINTS = {"244": "sft/kept/textcraft/step-000244",
               "dagger1-100": "sft/kept/textcraft-dagger1/step-000100"}
TEMPERATURES = (1.0, 0.7, 0.5, 0.3)
TOP_K, TOP_P = 40, 0.95  # the search's prior options


def truncated_probs(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """(M, V) sampling probabilities after temperature, top-k and top-p (rows sum to 1)."""
    z = logits / temperature
    kth = torch.topk(z, TOP_K, dim=-1).values[:, -1:]
    p = torch.softmax(z.masked_fill(z < kth, float("-inf")), -1)
    sp, si = torch.topk(p, TOP_K, dim=-1)
    keep = sp.masked_fill(sp.cumsum(-1) - sp > TOP_P, 0.0)
    out = torch.zeros_like(p).scatter(1, si, keep)
    return out / out.sum(-1, keepdim=True)


@torch.no_grad()
def agreement(opts: SFTOptions, demos: list[Any]) -> dict[str, float]:
    """Greedy exact-match share and, per temperature, the mean probability of sampling the
    planner's completion exactly."""
    model, tok, device = load_lora(opts)
    model.eval()
    ex = tokenize(tok, demos)
    greedy, sampled = 0, {t: 0.0 for t in TEMPERATURES}
    for b in batches(ex, opts.batch_tokens, np.random.default_rng(0)):
        part = [ex[i] for i in b]
        logits, target, rows = completion_logits(model, *collate(part, tok.pad_token_id, device))
        wrong = torch.zeros(len(part), dtype=torch.long).index_add_(
            0, rows, (logits.argmax(-1) != target).long())
        greedy += int((wrong == 0).sum())
        for t in TEMPERATURES:
            logp = torch.log(truncated_probs(logits, t).gather(1, target[:, None])[:, 0])
            seq = torch.zeros(len(part)).index_add_(0, rows, logp)  # log P(completion)
            sampled[t] += float(seq.exp().sum())
    return {"greedy": greedy / len(ex), **{f"T={t:g}": v / len(ex) for t, v in sampled.items()}}


def heldout_groups() -> tuple[SFTOptions, dict[str, list[Any]]]:
    """The DAgger run's options and its held-out pairs (the SFT tables' seeded draw of
    tasks), split into the planner's states and checkpoint 244's own."""
    base = validate(SFTOptions, yaml.safe_load((HERE / "sft.yaml").read_text()), "sft")
    demos = read_demos(REPO / "sft/out-dagger1/demos.jsonl")
    held = split_holdout([d.task_id for d in demos], base.holdout_fraction, base.seed)
    return base, {"planner's episodes": [d for d in demos if d.task_id in held
                                         and not is_own_state(d, base)],
                  "checkpoint 244's own states": [d for d in demos if d.task_id in held
                                                  and is_own_state(d, base)]}


def main() -> int:
    base, groups = heldout_groups()
    cols = ["greedy"] + [f"T={t:g}" for t in TEMPERATURES]
    lines = ["| checkpoint | held-out states | pairs | greedy exact | "
             + " | ".join(f"P(sample = planner), T {t:g}" for t in TEMPERATURES) + " |",
             "|" + "---|" * (4 + len(TEMPERATURES))]
    for name, adapter in CHECKPOINTS.items():
        opts = base.model_copy(update={"init_adapter": str(REPO / adapter)})
        for g, ds in groups.items():
            r = agreement(opts, ds)
            lines.append(f"| {name} | {g} | {len(ds)} | "
                         + " | ".join(f"{r[c]:.3f}" for c in cols) + " |")
            print(lines[-1], flush=True)
    OUT.write_text(
        "Exploratory (studies/sft_prior/dagger/sampling.py): on the SFT tables' held-out pairs, "
        f"the share whose greedy completion is the planner's, and the mean probability that one "
        f"sampled completion (top-k {TOP_K}, top-p {TOP_P}) is exactly the planner's, by "
        "temperature (the search samples at T 1).\n\n" + "\n".join(lines) + "\n")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
