"""GRPO training throughput on a GPU: seconds per round, rollouts/s and generated tokens/s.

Runs ``amc grpo``'s own loop (:func:`amc.grpo.trainer.train`) with ``configs/grpo/gpu.yaml``
cut to ``--steps`` rounds (no MLflow run), then reports the measured costs. On a CPU it runs too
(``--device cpu --steps 1`` is a smoke test) but the numbers are not the point there.

    python -m benchmarks.bench_grpo_gpu [--config configs/grpo/gpu.yaml] [--steps 3] [--write]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from amc.config import load_yaml, validate
from amc.grpo.config import GRPOOptions
from amc.grpo.trainer import train
from benchmarks._report import write_section

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--config", default=str(ROOT / "configs" / "grpo" / "gpu.yaml"))
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--device", default=None, help="override the config's device")
    ap.add_argument("--write", action="store_true", help="record in docs/benchmarks.md")
    a = ap.parse_args()
    data = load_yaml(a.config)
    with tempfile.TemporaryDirectory() as tmp:
        data.update(steps=a.steps, track=False, out_dir=tmp)
        if a.device:
            data["device"] = a.device
        opts = validate(GRPOOptions, data, a.config)
        res = train(opts)
    c = res.costs
    rounds = [r["wall_s"] for r in res.curve]
    body = "\n".join([
        f"Config `{Path(a.config).name}` cut to {a.steps} rounds: {opts.tasks_per_step} groups "
        f"x G = {opts.group_size}, <= {opts.max_turns} turns, model `{opts.model}` "
        f"({opts.dtype}, LoRA r={opts.lora_r}).", "",
        "| round s (mean) | rollouts/s | generated tokens/s | prompt tokens/s | CPU s | GPU s |",
        "|---|---|---|---|---|---|",
        f"| {sum(rounds) / len(rounds):.1f} | {c.rollouts / c.wall_s:.2f} | "
        f"{c.generated_tokens / c.wall_s:.1f} | {c.prompt_tokens / c.wall_s:.0f} | "
        f"{c.cpu_s:.0f} | {c.gpu_s:.0f} |"])
    print(body)
    if a.write:
        write_section("grpo_gpu", "GRPO training throughput (bench_grpo_gpu)", body)


if __name__ == "__main__":
    main()
