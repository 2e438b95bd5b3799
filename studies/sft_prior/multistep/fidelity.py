"""Exploratory: is the DAgger checkpoint served in bfloat16 the same prior as in float32?

The multi-step cell serves the chosen checkpoint's merged weights in bfloat16 (twice as fast,
docs/benchmarks.md), while the searches ran float32. On the SFT tables' held-out pairs (the
DAgger run's held-out tasks: the planner's states and checkpoint 244's own), with the weights
exactly as the ``hf`` prior serves them (adapter merged), this reads per dtype the share whose
greedy completion is the planner's and the probability that one sampled completion (T 1, the
prior's top-k and top-p) is exactly the planner's, and between the dtypes the mean total
variation distance of the per-token sampling distributions along the planner's completion.
Nothing here is declared; the cell's own Best-of-4 against the float32 search's is the
behavioural read (``analyse.py``).

    python -m studies.sft_prior.multistep.fidelity
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from amc.priors.hf import HFOptions, HFPrior, truncated
from amc.sft.trainer import batches, collate, completion_logits, tokenize
from studies.sft_prior.dagger.sampling import heldout_groups
from studies.sft_prior.multistep.run import EVIDENCE, REPO, protocol


def sampling_probs(logits: torch.Tensor, options: HFOptions) -> torch.Tensor:
    """(M, V) the prior's sampling distribution at each position (rows sum to 1)."""
    probs, ids = truncated(logits / options.temperature, options.top_k, options.top_p)
    out = torch.zeros_like(logits).scatter(1, ids, probs)
    return out / out.sum(-1, keepdim=True)


@torch.no_grad()
def read(models: dict[str, Any], tok: Any, options: HFOptions, demos: list[Any]
         ) -> dict[str, float]:
    """Per dtype greedy exact and P(sample = planner); mean per-token TV between dtypes."""
    ex = tokenize(tok, demos)
    greedy = {k: 0 for k in models}
    sampled = {k: 0.0 for k in models}
    tv: list[float] = []
    for b in batches(ex, 4096, np.random.default_rng(0)):
        part = [ex[i] for i in b]
        batch = collate(part, tok.pad_token_id, torch.device("cpu"))
        probs = {}
        for name, model in models.items():
            logits, target, rows = completion_logits(model, *batch)
            wrong = torch.zeros(len(part), dtype=torch.long).index_add_(
                0, rows, (logits.argmax(-1) != target).long())
            greedy[name] += int((wrong == 0).sum())
            probs[name] = sampling_probs(logits, options)
            logp = torch.log(probs[name].gather(1, target[:, None])[:, 0])
            sampled[name] += float(torch.zeros(len(part)).index_add_(0, rows, logp).exp().sum())
        a, c = probs.values()
        tv += (0.5 * (a - c).abs().sum(-1)).tolist()
    n = len(ex)
    return {**{f"greedy {k}": v / n for k, v in greedy.items()},
            **{f"P(sample) {k}": v / n for k, v in sampled.items()},
            "mean TV per token": float(np.mean(tv)), "max TV per token": float(np.max(tv))}


def main() -> int:
    _, groups = heldout_groups()
    served = protocol()["prior"]["options"]
    priors = {dt: HFPrior(HFOptions(**{**served, "dtype": dt, "adapter": str(
        REPO / served["adapter"])}), env="textcraft") for dt in ("float32", "bfloat16")}
    models = {dt: p.model for dt, p in priors.items()}
    options = priors["float32"].options
    tok = priors["float32"].tokenizer
    cols = ["greedy float32", "greedy bfloat16", "P(sample) float32", "P(sample) bfloat16",
            "mean TV per token", "max TV per token"]
    lines = ["| held-out states | pairs | " + " | ".join(cols) + " |",
             "|" + "---|" * (2 + len(cols))]
    for g, ds in groups.items():
        r = read(models, tok, options, ds)
        lines.append(f"| {g} | {len(ds)} | " + " | ".join(f"{r[c]:.3f}" for c in cols) + " |")
        print(lines[-1], flush=True)
    out = EVIDENCE / "fidelity.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        "Exploratory (studies/sft_prior/multistep/fidelity.py): checkpoint dagger1-100 as the "
        "`hf` prior serves it (adapter merged), in float32 and in bfloat16, on the DAgger run's "
        "held-out pairs: greedy exact match with the planner, the probability that one sampled "
        "completion (T 1, top-k 40, top-p 0.95) is exactly the planner's, and the total "
        "variation distance between the two dtypes' sampling distributions at each token of "
        "the planner's completion.\n\n" + "\n".join(lines) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
