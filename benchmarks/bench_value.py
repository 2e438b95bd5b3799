"""Value-model throughput on CPU: batched vs per-particle scoring, and training samples/s.

Scoring: N particle histories of a TextCraft-like task (t = 6 steps, rendered to at most
``--max-tokens`` tokens) are scored by :class:`amc.value.scorers.LearnedValue` either in one
``score(histories)`` call (one length-sorted, dynamically padded forward pass) or one call per
particle (what the reference implementation did), cache disabled in both so every state is
computed. Training: samples/s of :func:`amc.value.train.train` on a synthetic dataset.
Both ratios are measured side by side in one run. The model is the default MiniLM-L6 backbone
with a fresh head (weights do not change the cost). Results go to docs/benchmarks.md.

    python -m benchmarks.bench_value [--n 15 64] [--repeats 3] [--train-rows 64]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from amc.types import History, Step
from amc.value.data import DatasetOptions, build_dataset
from amc.value.model import ModelConfig, build_model, load_tokenizer_for
from amc.value.render import RenderOptions
from amc.value.scorers import LearnedValue
from amc.value.train import TrainConfig, train
from benchmarks._report import md_table, write_section

OBS0 = ("Crafting commands:\ncraft 4 oak planks using 1 oak log\ncraft 4 stick using 2 oak planks\n"
        "craft 1 wooden pickaxe using 3 oak planks, 2 stick\n\nGoal: craft wooden pickaxe.")
ITEMS = ["oak log", "oak planks", "stick", "cobblestone", "iron ingot", "string"]


def particle_histories(n: int, t: int = 6, seed: int = 0) -> list[History]:
    """N distinct TextCraft-like histories of t steps."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        h = History("bench", OBS0)
        for s in range(t):
            item = ITEMS[int(rng.integers(len(ITEMS)))]
            k = int(rng.integers(1, 5))
            h = h.extend(Step("", f"get {k} {item}", f"Got {k} {item} (particle {i}, step {s}). "
                              f"Inventory: [{item}] ({k})", 0.0, False))
        out.append(h)
    return out


async def _time_scoring(value: LearnedValue, hs: list[History], batched: bool,
                        repeats: int) -> float:
    """Best wall time over ``repeats`` of scoring all of ``hs``."""
    best = float("inf")
    for _ in range(repeats):
        value.clear_cache()
        t0 = time.perf_counter()
        if batched:
            await value.score(hs)
        else:
            for h in hs:
                await value.score([h])
        best = min(best, time.perf_counter() - t0)
    return best


def scoring_rows(ns: list[int], repeats: int, max_tokens: int) -> list[list[object]]:
    """[tokens, N, per-particle states/s, batched states/s, speed-up] per N."""
    cfg = ModelConfig(max_length=max_tokens + 8)
    tok = load_tokenizer_for(cfg)
    model = build_model(cfg, torch.Generator().manual_seed(0)).eval()
    value = LearnedValue(model, tok, RenderOptions(env="textcraft", max_tokens=max_tokens),
                         batch_size=64, device="cpu", cache_size=0)
    rows = []
    for n in ns:
        hs = particle_histories(n)
        asyncio.run(_time_scoring(value, hs[:2], True, 1))  # warm-up
        asyncio.run(_time_scoring(value, hs[:2], False, 1))
        t_batch = t_single = float("inf")
        for _ in range(repeats):  # interleaved, best of each: the machine's load drifts
            t_batch = min(t_batch, asyncio.run(_time_scoring(value, hs, True, 1)))
            t_single = min(t_single, asyncio.run(_time_scoring(value, hs, False, 1)))
        rows.append([max_tokens, n, f"{n / t_single:.1f}", f"{n / t_batch:.1f}",
                     f"{t_single / t_batch:.1f}x"])
        print(f"N={n}: per-particle {t_single:.2f}s, batched {t_batch:.2f}s", flush=True)
    return rows


def _train_throughput(n_rows: int, max_length: int) -> float:
    hs = []
    rng = np.random.default_rng(1)
    for task in range(max(4, n_rows // 7)):
        for h in particle_histories(1, t=6, seed=int(rng.integers(1 << 30))):
            steps = (*h.steps[:-1], Step("", "craft", "Crafted.", float(rng.random() < 0.5), True))
            hs.append(History(str(task), OBS0, steps))
    with tempfile.TemporaryDirectory() as d:
        opts = DatasetOptions(render=RenderOptions(env="textcraft", max_tokens=max_length - 8),
                              val_fraction=0.0)
        build_dataset(hs, Path(d) / "ds", opts)
        cfg = TrainConfig(model=ModelConfig(max_length=max_length), epochs=1, batch_size=16,
                          max_train_rows=n_rows, track=False, device="cpu")
        return train(Path(d) / "ds", cfg, Path(d) / "run").samples_per_s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[15, 64])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, nargs="+", default=[248, 48],
                    help="render budgets to measure (the first is also used for training)")
    ap.add_argument("--train-rows", type=int, default=64)
    ap.add_argument("--no-write", action="store_true", help="print only")
    args = ap.parse_args()
    score = [row for mt in args.max_tokens for row in scoring_rows(args.n, args.repeats, mt)]
    train_len = args.max_tokens[0] + 8
    sps = _train_throughput(args.train_rows, train_len)
    body = (
        f"Scoring with `LearnedValue` (MiniLM-L6, renderings of 6-step TextCraft-like histories "
        f"cut to the token budget, cache off, best of {args.repeats}; torch threads "
        f"{torch.get_num_threads()}):\n\n"
        + md_table(["tokens", "N", "per-particle states/s", "batched states/s", "speed-up"],
                   score)
        + f"\n\nTraining (full fine-tuning, batch 16, {train_len} tokens max, "
        f"{args.train_rows} rows, 1 epoch): **{sps:.1f} samples/s**.\n\n"
        "On a CPU a forward pass of this encoder costs FLOPs in proportion to tokens, so one\n"
        "batched pass is not much cheaper than N single ones: batching only removes per-call\n"
        "overhead, which is small next to ~250-token encoder passes (it matters more for short\n"
        "inputs). The issue's goal of >= 20x at N = 15 is not reachable this way on a CPU; the\n"
        "CPU savings come from the LRU cache (resampled duplicates are not re-scored) and from\n"
        "scoring only at resampling steps; batching pays on a GPU (`bench_value_gpu.py`).\n"
    )
    print(body)
    if not args.no_write:
        write_section("value", "Value model (CPU): batched scoring and training", body)


if __name__ == "__main__":
    main()
