"""What fine-tuning the MiniLM-L6 value encoder costs on this machine, measured.

States per second of (a) a full fine-tuning step (forward, backward, AdamW on every weight;
``mode: full`` of :mod:`amc.value.train`, which already supports it), (b) a LoRA step (r = 8 on
the encoder's query/key/value/dense layers: ``model.lora: true`` with those targets), (c)
scoring (forward only: what embedding for head mode and every validation pass cost), each on
batches of 16 real rendered states at 128 tokens after one warm-up batch, seeded subsample, in
interleaved rounds. The machine is shared: the 1-minute load average is recorded before and
after.
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np
import torch

BATCH = 16
TRAIN_BATCHES = 6
SCORE_BATCHES = 12
ROUNDS = 2
"""Each rate is measured in this many interleaved rounds (score, full, LoRA, score, ...)."""
RUN = {"train_rows": 6595, "val_rows": 1784, "held_out_rows": 3424, "epochs": 3}
"""The rounds' last training (round 3's ledger: 6595 / 1784 rows, train.epochs 3) and the
held-out set: what one run of the loop trains and scores."""


def _rate(model: Any, tok: Any, texts: list[str], train: bool, n_batches: int) -> dict[str, Any]:
    from amc.value.model import encode, pad_batch

    ids = encode(tok, texts, 128)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=5e-5) if train else None
    y = torch.zeros(BATCH)
    timed, t0 = 0, 0.0
    for b in range(n_batches + 1):
        x, m = pad_batch(ids[b * BATCH: (b + 1) * BATCH], tok.pad_token_id)
        if b == 1:
            t0 = time.perf_counter()
        if train and opt is not None:
            model.train()
            loss = model.loss(model(x, m), y[: len(x)])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        else:
            model.eval()
            with torch.inference_mode():
                model(x, m)
        timed += len(x) if b else 0
    seconds = time.perf_counter() - t0
    return {"states": timed, "seconds": seconds, "states_per_s": timed / seconds}


def finetune_cost(texts: list[str], seed: int = 0) -> dict[str, Any]:
    """Measured rates and what one run of the rounds' size costs in minutes."""
    from amc.value.model import ModelConfig, build_model, load_tokenizer_for

    rng = np.random.default_rng(seed)
    pick = [texts[i] for i in rng.permutation(len(texts))[: BATCH * (SCORE_BATCHES + 1)]]
    load_before = os.getloadavg()[0]
    torch.manual_seed(seed)
    full_cfg = ModelConfig(max_length=128, num_layers=6)
    tok = load_tokenizer_for(full_cfg)
    full = build_model(full_cfg, torch.Generator().manual_seed(seed))
    lora_cfg = ModelConfig(max_length=128, num_layers=6, lora=True,
                           lora_targets=("query", "key", "value", "dense"))
    lora = build_model(lora_cfg, torch.Generator().manual_seed(seed))
    runs: dict[str, list[dict[str, Any]]] = {"score (forward only)": [],
                                             "full fine-tuning step": [], "LoRA step (r 8)": []}
    for _ in range(ROUNDS):  # interleaved, so a load change hits every kind alike
        runs["score (forward only)"].append(_rate(full, tok, pick, False, SCORE_BATCHES))
        runs["full fine-tuning step"].append(_rate(full, tok, pick, True, TRAIN_BATCHES))
        runs["LoRA step (r 8)"].append(_rate(lora, tok, pick, True, TRAIN_BATCHES))
    rates = {k: {"states": sum(r["states"] for r in rs),
                 "seconds": sum(r["seconds"] for r in rs),
                 "states_per_s": sum(r["states"] for r in rs) / sum(r["seconds"] for r in rs),
                 "per_round": [r["states_per_s"] for r in rs]} for k, rs in runs.items()}
    score = rates["score (forward only)"]["states_per_s"]
    scored = RUN["val_rows"] * RUN["epochs"] + RUN["held_out_rows"]

    def minutes(train_rate: float) -> float:
        return (RUN["train_rows"] * RUN["epochs"] / train_rate + scored / score) / 60

    run = {**RUN, "full_minutes": minutes(rates["full fine-tuning step"]["states_per_s"]),
           "lora_minutes": minutes(rates["LoRA step (r 8)"]["states_per_s"]),
           "head_minutes": (RUN["train_rows"] + RUN["val_rows"] + RUN["held_out_rows"])
           / score / 60}
    return {"rates": rates, "run": run, "load_before": load_before,
            "load_after": os.getloadavg()[0], "cpus": os.cpu_count(), "batch": BATCH}
