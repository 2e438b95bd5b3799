"""The ``hf`` prior's step cost on a GPU: one SMC step's N proposals decoded as one batch, the
particles' shared prompt prefix computed once and shared through the KV cache.

The N particles of a step share most of their prompt (few-shot examples, task, the history
before they diverged). Three ways to decode one step, all sampling each row with its own
seeded ``torch.Generator`` (temperature, top-k 40, top-p 0.95; stop at a newline):

- ``sequential``: N separate batch-of-1 decodes (what a one-slot server does);
- ``batched``: one left-padded batch of the N full prompts (what :class:`~amc.priors.hf.HFPrior`
  does today): the weights are read once per token for all N rows, but the shared prefix is
  prefilled N times;
- ``shared``: the longest common token prefix is prefilled once (batch 1), its KV cache is
  repeated to N rows, and only the N suffixes are prefilled (left-padded after the prefix:
  ``[prefix][pad..][suffix]`` with the pads masked out and positions continuing the prefix).
  Exact only while the padded sequence fits the model's sliding attention window (Gemma-3:
  512): beyond it, it falls back to ``batched`` (reported as a 0% prefix).

Reported per N: the step's wall time over one call's (the N = 1 sequential step), completion
tokens per second in total, and the shared fraction of the prompt tokens. ``--toy`` runs a
tiny random model on the CPU (a smoke run; ``tests/priors/test_bench_priors_gpu.py``
checks that the three decoders agree there). ``--write`` records the table in
docs/benchmarks.md.

    python -m benchmarks.bench_priors_gpu [--model embedded:gemma-3-270m] [--ns 1,4,8,15,64]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import torch

from amc.priors.prompts import completion_prompt
from amc.types import History, Step

DECODERS = ("sequential", "batched", "shared")


def common_prefix_len(rows: list[list[int]]) -> int:
    """Length of the longest token prefix shared by every row."""
    n = min(len(r) for r in rows)
    first = rows[0]
    for i in range(n):
        if any(r[i] != first[i] for r in rows[1:]):
            return i
    return n


def sample(logits: torch.Tensor, gens: list[torch.Generator], temperature: float,
           top_k: int, top_p: float) -> torch.Tensor:
    """One token per row, (B, V) -> (B,), each row from its own generator; temperature 0 =
    greedy (the tests' exact comparison)."""
    if temperature == 0:
        return logits.argmax(-1)
    logits = logits.float() / temperature
    kth = torch.topk(logits, min(top_k, logits.shape[-1]), dim=-1).values[:, -1:]
    probs = torch.softmax(logits.masked_fill(logits < kth, float("-inf")), -1)
    sp, si = torch.sort(probs, descending=True, dim=-1)
    sp = sp.masked_fill(sp.cumsum(-1) - sp > top_p, 0.0)
    probs = torch.zeros_like(probs).scatter(1, si, sp)
    return torch.cat([torch.multinomial(probs[i], 1, generator=g) for i, g in enumerate(gens)])


def window_covers(model: Any, length: int) -> bool:
    """Whether a sequence of ``length`` cache entries fits every sliding attention window.

    transformers applies a sliding window over cache *indices*, not positions, so the pads
    between the shared prefix and a shorter suffix would push real tokens out of it (measured
    at toy size: the step's samples change); within the window, masked pads change nothing."""
    window = getattr(model.config, "sliding_window", None)
    return window is None or length <= window


@torch.inference_mode()
def decode(model: Any, rows: list[list[int]], seeds: list[int], *, max_new: int,
           stop: torch.Tensor, pad_id: int, share_prefix: bool, temperature: float = 1.0,
           top_k: int = 40, top_p: float = 0.95) -> tuple[list[list[int]], int]:
    """Decode ``rows`` (token ids) as one batch; returns the completions and the prefix length
    computed once. ``stop`` is a (V,) bool tensor of tokens that end a row."""
    dev = model.device
    b = len(rows)
    # Every row keeps >= 1 suffix token, so its first logits come from the batched pass.
    p = min(common_prefix_len(rows), min(map(len, rows)) - 1) if share_prefix and b > 1 else 0
    if p and not window_covers(model, p + max(len(r) - p for r in rows) + max_new):
        p = 0  # pads between prefix and suffix would shrink a sliding window: share nothing
    cache = None
    if p:
        cache = model(input_ids=torch.tensor([rows[0][:p]], device=dev), use_cache=True,
                      logits_to_keep=1).cache
        cache.batch_repeat_interleave(b)  # (1, ...) -> (B, ...): the prefix computed once
    s = max(len(r) - p for r in rows)
    ids = torch.full((b, s), pad_id, dtype=torch.long, device=dev)
    mask = torch.zeros((b, s), dtype=torch.long, device=dev)
    for i, r in enumerate(rows):  # left-pad each suffix against the prefix
        ids[i, s - len(r) + p:] = torch.tensor(r[p:], device=dev)
        mask[i, s - len(r) + p:] = 1
    attn = torch.cat([torch.ones((b, p), dtype=torch.long, device=dev), mask], 1)
    pos = (p + mask.cumsum(-1) - 1).clamp(min=p)  # positions continue the prefix; pads masked
    gens = [torch.Generator(device=dev).manual_seed(sd) for sd in seeds]
    out: list[list[int]] = [[] for _ in rows]
    done = torch.zeros(b, dtype=torch.bool, device=dev)
    for _ in range(max_new):
        # logits_to_keep=1: only the last position's logits (B, 1, V); all of them would be
        # B x L x 262k floats for Gemma's vocabulary, gigabytes at N = 15.
        res = model(input_ids=ids, attention_mask=attn, position_ids=pos, cache=cache,
                    use_cache=True, logits_to_keep=1)
        cache = res.cache
        nxt = sample(res.logits[:, -1, :], gens, temperature, top_k, top_p)
        for i in (~done).nonzero().flatten().tolist():
            out[i].append(int(nxt[i]))
        done |= stop[nxt]
        if bool(done.all()):
            break
        ids = nxt[:, None]
        attn = torch.cat([attn, torch.ones_like(ids)], 1)
        pos = pos[:, -1:] + 1
    return out, p


def step(model: Any, rows: list[list[int]], seeds: list[int], how: str,
         **kw: Any) -> tuple[list[list[int]], int]:
    """One SMC step's N proposals by decoder ``how`` (see the module docstring)."""
    if how == "sequential":
        outs = [decode(model, [r], [s], share_prefix=False, **kw)[0][0]
                for r, s in zip(rows, seeds, strict=True)]
        return outs, 0
    return decode(model, rows, seeds, share_prefix=how == "shared", **kw)


def particle_prompts(n: int, seed: int) -> list[str]:
    """N menu prompts of one TextCraft-like task whose particles diverged at the last step."""
    obs = ("Crafting commands:\ncraft 4 oak planks using 1 oak log\ncraft 4 stick using 2 oak "
           "planks\ncraft 1 crafting table using 4 oak planks\n\nGoal: craft crafting table.")
    menu = ("inventory", "get 1 oak log", "get 1 ink sac", "craft 4 oak planks using 1 oak log")
    h = History("bench", obs, valid_actions=menu).extend(
        Step("", "get 1 oak log", "Got 1 oak log", 0.0, False)).with_valid_actions(menu)
    acts = [menu[(seed + i) % len(menu)] for i in range(n)]
    return [completion_prompt(h.extend(Step("", a, f"Did {a} ({i})", 0.0, False))
                              .with_valid_actions(menu), "textcraft", "menu")
            for i, a in enumerate(acts)]


def load(model: str, toy: bool, device: str) -> tuple[Any, Any]:
    """The model and tokenizer (``toy``: a tiny random Gemma-3 with the real tokenizer)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from amc.priors.hf import converted_model_dir

    # The converted folder's tokenizer.json loads in seconds (building it from the GGUF's
    # 262k-token vocabulary took over 15 minutes on a loaded 2-core machine).
    path = converted_model_dir(model.split(":", 1)[1]) if model.startswith("embedded:") else model
    tok = AutoTokenizer.from_pretrained(path)
    if toy:
        from transformers import Gemma3TextConfig

        cfg = Gemma3TextConfig(vocab_size=len(tok), hidden_size=64, intermediate_size=128,
                               num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
                               head_dim=32, sliding_window=1024)
        torch.manual_seed(0)
        lm = AutoModelForCausalLM.from_config(cfg)
    else:
        dtype = torch.bfloat16 if device == "cuda" else torch.float32
        lm = AutoModelForCausalLM.from_pretrained(path, dtype=dtype)
    return lm.to(device).eval(), tok


def newline_tokens(tok: Any, device: str) -> torch.Tensor:
    """(V,) bool: tokens whose text holds a newline, or end of sequence."""
    vocab = tok.convert_ids_to_tokens(list(range(len(tok))))
    stop = torch.tensor([bool(t) and ("\n" in t or "Ċ" in t or t == "<0x0A>") for t in vocab])
    stop[tok.eos_token_id] = True
    return stop.to(device)


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def run(model: Any, tok: Any, ns: list[int], reps: int, max_new: int,
        device: str) -> list[list[object]]:
    kw = dict(max_new=max_new, stop=newline_tokens(tok, device), pad_id=tok.pad_token_id or 0)
    step(model, [tok(particle_prompts(1, 0)[0])["input_ids"]], [0], "batched", **kw)  # warm-up
    rows_out: list[list[object]] = []
    call = None
    for n in ns:
        rows = [tok(p)["input_ids"] for p in particle_prompts(n, n)]
        for how in DECODERS:
            if how == "sequential" and n > 16:
                continue  # N sequential calls: the shape is clear by N = 15
            walls, toks, shared = [], 0, 0
            for r in range(reps):
                sync(device)
                t0 = time.perf_counter()
                outs, shared = step(model, rows, [r * 1000 + i for i in range(n)], how, **kw)
                sync(device)
                walls.append(time.perf_counter() - t0)
                toks += sum(map(len, outs))
            wall = statistics.median(walls)
            call = wall if (n == 1 and how == "sequential") else call
            rows_out.append([n, how, f"{wall * 1000:.0f}", f"{wall / call:.2f}" if call else "",
                             f"{toks / sum(walls):.0f}",
                             f"{shared / statistics.mean(map(len, rows)):.0%}"])
    return rows_out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="embedded:gemma-3-270m")
    ap.add_argument("--ns", default="1,4,8,15,64")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--max-new", type=int, default=32)
    ap.add_argument("--toy", action="store_true", help="tiny random model on the CPU (smoke)")
    ap.add_argument("--write", action="store_true", help="record in docs/benchmarks.md")
    args = ap.parse_args()
    device = "cuda" if torch.cuda.is_available() and not args.toy else "cpu"
    model, tok = load(args.model, args.toy, device)
    ns = [int(n) for n in args.ns.split(",")]
    table = run(model, tok, ns, args.reps, args.max_new, device)
    from benchmarks._report import md_table, write_section

    gpu = torch.cuda.get_device_name() if device == "cuda" else "CPU (toy model)"
    text = (f"`python -m benchmarks.bench_priors_gpu` -- {args.model}"
            f"{' (tiny random weights)' if args.toy else ''} on {gpu}; one SMC step = N "
            f"menu-prompt proposals of one task, up to {args.max_new} new tokens, median of "
            f"{args.reps}. `step / call` divides by the N = 1 sequential step. `prefix` = share "
            f"of a prompt's tokens computed once for the whole step.\n\n"
            + md_table(["N", "decoder", "step (ms)", "step / call", "completion tok/s",
                        "prefix"], table))
    print(text)
    if args.write and not args.toy:
        write_section("priors_gpu", "hf prior on a GPU: batched steps, shared prefix", text)


if __name__ == "__main__":
    main()
