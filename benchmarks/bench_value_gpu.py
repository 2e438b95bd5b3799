"""GPU training (and scoring) throughput of the value model: MiniLM-L6 and a decoder LM + LoRA.

Self-contained and offline-safe: the encoder is the packaged MiniLM-L6; the decoder is
``--decoder PATH`` when a local Hugging Face checkpoint is given, otherwise a randomly
initialised model with the exact Qwen2.5-0.5B (or ``--decoder-shape 1.5b``) architecture --
random weights cost exactly what trained ones do. Inputs are random token ids of a fixed length
(the renderer pads nothing away at this length). Training uses the project's own
:class:`~amc.value.model.ValueModel` (mean pooling, MSE head; LoRA r=8, alpha=16 on q/k/v/o and
the MLP projections for the decoder), AdamW and bf16 autocast. Prints a markdown table;
``--write`` also records it in docs/benchmarks.md.

    python -m benchmarks.bench_value_gpu [--seq-len 512] [--batch 16] [--steps 10] [--write]
"""

from __future__ import annotations

import argparse
import time

import torch

from amc.value.model import ModelConfig, ValueModel, resolve_backbone

SHAPES = {  # Qwen2.5 architectures (config.json of the public checkpoints)
    "0.5b": dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                 num_attention_heads=14, num_key_value_heads=2),
    "1.5b": dict(hidden_size=1536, intermediate_size=8960, num_hidden_layers=28,
                 num_attention_heads=12, num_key_value_heads=2),
    "tiny": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,  # smoke test only
                 num_attention_heads=4, num_key_value_heads=2),
}


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def encoder_model(seed: int) -> tuple[ValueModel, int, str]:
    from transformers import AutoConfig, AutoModel

    path = resolve_backbone("minilm")
    cfg = AutoConfig.from_pretrained(path)
    model = ValueModel(ModelConfig(), AutoModel.from_pretrained(path), cfg,
                       torch.Generator().manual_seed(seed))
    return model, cfg.vocab_size, "MiniLM-L6 (22M), full fine-tuning"


def decoder_model(path: str | None, shape: str, seed: int) -> tuple[ValueModel, int, str]:
    from transformers import AutoConfig, AutoModel, Qwen2Config

    if path:
        cfg = AutoConfig.from_pretrained(path)
        base = AutoModel.from_pretrained(path, dtype=torch.bfloat16)
        label = path
    else:
        cfg = Qwen2Config(vocab_size=151936, max_position_embeddings=32768, rope_theta=1e6,
                          tie_word_embeddings=True, architectures=["Qwen2ForCausalLM"],
                          **SHAPES[shape])
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            base = AutoModel.from_config(cfg, dtype=torch.bfloat16)
        label = f"Qwen2.5-{shape.upper()} shape (random init)"
    mc = ModelConfig(backbone=path or "qwen2.5-shape", lora=True)
    model = ValueModel(mc, base, cfg, torch.Generator().manual_seed(seed))
    n = sum(p.numel() for p in model.parameters()) / 1e9
    return model, cfg.vocab_size, f"{label}, {n:.2f}B params, LoRA r=8"


def measure(model: ValueModel, vocab: int, batch: int, seq_len: int, steps: int,
            device: torch.device) -> dict[str, float]:
    """Training samples/s, scoring states/s (per particle and batched, N = 64), peak memory."""
    g = torch.Generator().manual_seed(0)
    model.to(device).train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-5)
    x = torch.randint(0, min(vocab, 30000), (batch, seq_len), generator=g).to(device)
    m = torch.ones_like(x)
    y = torch.rand(batch, generator=g).to(device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)

    def step() -> None:
        with torch.autocast(device.type, dtype=torch.bfloat16):
            raw = model(x, m)
        loss = model.loss(raw, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(3):
        step()
    _sync(device)
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    _sync(device)
    train_sps = batch * steps / (time.perf_counter() - t0)
    model.eval()
    xs = torch.randint(0, min(vocab, 30000), (64, seq_len), generator=g).to(device)
    with torch.inference_mode(), torch.autocast(device.type, dtype=torch.bfloat16):
        model(xs, torch.ones_like(xs))
        _sync(device)
        t0 = time.perf_counter()
        for _ in range(5):
            model(xs, torch.ones_like(xs))
        _sync(device)
        score_sps = 64 * 5 / (time.perf_counter() - t0)
        t0 = time.perf_counter()  # per-particle: 64 forwards of one state each
        for i in range(64):
            model(xs[i:i + 1], torch.ones_like(xs[i:i + 1]))
        _sync(device)
        single_sps = 64 / (time.perf_counter() - t0)
    peak = torch.cuda.max_memory_allocated(device) / 2**30 if device.type == "cuda" else 0.0
    model.to("cpu")
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return {"train": train_sps, "score": score_sps, "single": single_sps, "peak_gib": peak}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seq-len", type=int, default=512)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--decoder", default=None, help="local HF checkpoint of a decoder LM")
    ap.add_argument("--decoder-shape", choices=sorted(SHAPES), default="0.5b")
    ap.add_argument("--skip-decoder", action="store_true")
    ap.add_argument("--write", action="store_true", help="record in docs/benchmarks.md")
    ap.add_argument("--device", default="cuda", help="cuda (the point); cpu for a smoke test")
    args = ap.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("no CUDA device: this benchmark needs a GPU (--device cpu to smoke-test)")
    dev = torch.device(args.device)
    builders = [lambda: encoder_model(0)]
    if not args.skip_decoder:
        builders.append(lambda: decoder_model(args.decoder, args.decoder_shape, 0))
    rows = []
    for build in builders:
        model, vocab, label = build()
        r = measure(model, vocab, args.batch, args.seq_len, args.steps, dev)
        rows.append(f"| {label} | {r['train']:.1f} | {r['single']:.1f} | {r['score']:.1f} | "
                    f"{r['score'] / r['single']:.1f}x | {r['peak_gib']:.1f} |")
        print(rows[-1], flush=True)
        del model
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "CPU"
    body = (f"Device: {name}; batch {args.batch} x {args.seq_len} tokens, "
            f"bf16 autocast, AdamW, {args.steps} timed steps after 3 warm-up; scoring N = 64.\n\n"
            "| backbone | train samples/s | per-particle states/s | batched states/s (N = 64) "
            "| speed-up | peak GiB |\n|---|---|---|---|---|---|\n"
            + "\n".join(rows) + "\n")
    print(body)
    if args.write:
        from benchmarks._report import write_section

        write_section("value-gpu", "Value model (GPU): training and scoring throughput", body)


if __name__ == "__main__":
    main()
