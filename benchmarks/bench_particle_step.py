"""The LLM prior's particle-step cost: today's embedded prior and the ``hf`` prior, with and
without per-particle KV reuse, side by side on real TextCraft depth-2 histories.

A step is N concurrent ``propose`` calls (what the SMC driver sends), timed from the first
call to the last answer. The histories are fixed before any prior runs, so every prior sees
the same prompts: N particles play a train task (each step the planner's next action with
probability ``--q``, else a random valid action, from a seeded generator) and are resampled
uniformly after every step (children of one parent share its history, as after SMC's
resampling). Priors, in the order of every task's turn:

- ``embedded``: the embedded prior as ``make run`` uses it (llama-cpp-python's server, GGUF
  Q4_K_M, the few-shot menu prompt); response cache off.
- ``hf``: the same model in process (fp32 transformers), few-shot menu prompt, whole prefill.
- ``hf+kv``: the same with KV reuse (:mod:`amc.priors.kv_cache`), few-shot prompt.
- ``hf+kv compact``: KV reuse and the compact prompt of a fine-tuned model (no instruction, no
  solved example). With the base weights: an adapter merged into them costs nothing more,
  but it changes what the model writes, so completion tokens per call are reported.
- ``hf+kv compact bf16``: the same weights served in bfloat16 (``dtype: bfloat16``; the CPU's
  AVX-512 BF16 products read half the bytes). Not the same numbers as float32: its
  completions are reported beside, and its fidelity is measured apart.

Goal (issue 61): a step of N = 4 particles <= 1.2 s on 2 quiet cores (<= 0.3 s per particle).
The machine is shared; its load average is printed and written with the figures.

Run: ``python -m benchmarks.bench_particle_step [--tasks 2] [--steps 4]``; section
``particle-step`` of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from amc.envs.textcraft.env import TextCraftOptions, TextCraftSuite
from amc.envs.textcraft.tasks import plan
from amc.types import History, Step
from benchmarks._report import md_table, write_section

NS = (1, 4, 8)


def particle_histories(suite: TextCraftSuite, task: str, n: int, steps: int, q: float,
                       seed: int) -> list[list[History]]:
    """Per step, the ``n`` histories (valid actions attached) the particles propose from."""
    rng = np.random.default_rng(seed)
    goal_plan = plan(suite.book, suite.tasks.goal(task))
    envs = [suite.make() for _ in range(n)]
    obs0 = [e.reset(task) for e in envs].pop()
    hist: list[tuple[Step, ...]] = [() for _ in range(n)]
    out = []
    for t in range(steps):
        out.append([History(task, obs0, hist[i], tuple(envs[i].valid_actions() or ()))
                    for i in range(n)])
        for i, env in enumerate(envs):
            valid = env.valid_actions() or ["inventory"]
            planned = goal_plan[t] if t < len(goal_plan) else "inventory"
            a = planned if rng.random() < q else valid[int(rng.integers(len(valid)))]
            r = env.step(a)
            hist[i] = (*hist[i], Step(f" {a}", a, r.observation, r.reward, r.done))
        parents = rng.integers(n, size=n)  # uniform resampling: children share a history
        hist = [hist[p] for p in parents]
        envs = [envs[p].fork() for p in parents]
    return out


@dataclass
class Tally:
    """One prior at one N: step wall times and what its calls cost in tokens."""

    steps: list[float] = field(default_factory=list)
    cpu_s: float = 0.0  # this process's CPU time, plus the server's for the embedded prior
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    computed_tokens: int = 0  # hf with KV reuse: prompt tokens that ran through the model


async def one_step(prior: Any, hs: list[History], seed: int) -> tuple[float, list[Any]]:
    rngs = [np.random.default_rng([seed, i]) for i in range(len(hs))]
    t0 = time.perf_counter()
    turns = await asyncio.gather(*(prior.propose(h, r) for h, r in zip(hs, rngs, strict=True)))
    return time.perf_counter() - t0, turns


def server_cpu_s(prior: Any) -> float:
    """CPU seconds the prior's own server process has used (0 for in-process priors)."""
    proc = getattr(getattr(prior, "server", None), "proc", None)
    if proc is None:
        return 0.0
    fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def make_priors(which: list[str], threads: int | None, adapter: str | None
                ) -> dict[str, Any]:
    from amc.priors.embedded import EmbeddedOptions, EmbeddedPrior
    from amc.priors.hf import HFOptions, HFPrior

    priors: dict[str, Any] = {}
    if "embedded" in which:
        priors["embedded"] = EmbeddedPrior(EmbeddedOptions(cache=False, n_threads=threads),
                                           env="textcraft")
    if "hf" in which:
        priors["hf"] = HFPrior(HFOptions(kv_reuse=False), env="textcraft")
    if "hf+kv" in which:
        priors["hf+kv"] = HFPrior(HFOptions(), env="textcraft")
    if "hf+kv compact" in which:
        priors["hf+kv compact"] = HFPrior(
            HFOptions(few_shot=False, instruction=False, adapter=adapter), env="textcraft")
    if "hf+kv compact bf16" in which:
        priors["hf+kv compact bf16"] = HFPrior(
            HFOptions(few_shot=False, instruction=False, adapter=adapter, dtype="bfloat16"),
            env="textcraft")
    return priors


async def run(args: argparse.Namespace) -> tuple[dict[tuple[str, int], Tally], dict[str, Any]]:
    suite = TextCraftSuite(TextCraftOptions(min_depth=2, max_depth=2))
    tasks = suite.task_ids("train")[: args.tasks]
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    priors = make_priors(args.priors, args.threads, args.adapter)
    info: dict[str, Any] = {"tasks": tasks, "entry_bytes_per_token": None, "peak_cache_mb": 0.0}
    for p in priors.values():  # start servers, load weights, warm up (not timed)
        if hasattr(p, "ensure_started"):
            await p.ensure_started()
        await one_step(p, particle_histories(suite, tasks[0], 1, 1, 1.0, 0)[0], 0)
    tallies = {(name, n): Tally() for name in priors for n in NS}
    for k, task in enumerate(tasks):
        for n in NS:
            steps = particle_histories(suite, task, n, args.steps, args.q, seed=k)
            for name, p in priors.items():  # every prior plays the same steps, in turn
                tally, pc = tallies[name, n], getattr(p, "prefix_cache", None)
                if pc is not None:
                    pc.entries.clear()  # each task's particles start cold
                for t, hs in enumerate(steps):
                    before = pc.stats.computed_tokens if pc is not None else 0
                    cpu0 = time.process_time() + server_cpu_s(p)
                    wall, turns = await one_step(p, hs, seed=1000 * k + t)
                    tally.cpu_s += time.process_time() + server_cpu_s(p) - cpu0
                    tally.steps.append(wall)
                    tally.calls += len(turns)
                    tally.prompt_tokens += sum(x.usage.prompt_tokens for x in turns)
                    tally.completion_tokens += sum(x.usage.completion_tokens for x in turns)
                    if pc is not None:
                        tally.computed_tokens += pc.stats.computed_tokens - before
                        mb = sum(e.nbytes for e in pc.entries.values()) / 2**20
                        info["peak_cache_mb"] = max(info["peak_cache_mb"], mb)
                        e = next(iter(pc.entries.values()))
                        kv_bytes = e.nbytes - e.logits.numel() * e.logits.element_size()
                        info["entry_bytes_per_token"] = kv_bytes / len(e.ids)
                last = statistics.mean(tally.steps[-args.steps:])
                print(f"task {task} N={n} {name}: step {last:.2f} s", flush=True)
    for p in priors.values():
        await p.aclose()
    return tallies, info


def table(tallies: dict[tuple[str, int], Tally], names: list[str]) -> list[list[object]]:
    rows: list[list[object]] = []
    for n in NS:
        ref = statistics.mean(tallies["embedded", n].steps) if "embedded" in names else None
        for name in names:
            t = tallies[name, n]
            step = statistics.mean(t.steps)
            computed = f"{t.computed_tokens / t.calls:.0f}" if "kv" in name else \
                f"{t.prompt_tokens / t.calls:.0f}"
            rows.append([n, name, f"{step:.2f}", f"{step / n:.3f}",
                         f"{step / ref:.2f}" if ref else "-", f"{t.cpu_s / t.calls:.3f}",
                         f"{t.prompt_tokens / t.calls:.0f}", computed,
                         f"{t.completion_tokens / t.calls:.1f}", len(t.steps)])
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", type=int, default=2)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--q", type=float, default=0.6)
    ap.add_argument("--priors", nargs="+",
                    default=["embedded", "hf", "hf+kv", "hf+kv compact"])
    ap.add_argument("--threads", type=int, default=None,
                    help="torch and llama.cpp threads (default: theirs, 2 on 2 cores)")
    ap.add_argument("--adapter", default=None,
                    help="an SFT LoRA adapter for the compact-prompt prior (e.g. sft/kept/...)")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    load_before = os.getloadavg()[0]
    t0 = time.time()
    tallies, info = asyncio.run(run(args))
    rows = table(tallies, args.priors)
    header = ["N", "prior", "step (s)", "per particle-step (s)", "step / embedded",
              "CPU s / particle-step",
              "prompt tokens / call", "tokens computed / call", "completion tokens / call",
              "steps"]
    text = md_table(header, rows)
    print(text)
    threads_arg = f" --threads {args.threads}" if args.threads else ""
    threads_arg += f" --adapter {args.adapter}" if args.adapter else ""
    if args.priors != ap.get_default("priors"):
        threads_arg += " --priors " + " ".join(f"'{p}'" for p in args.priors)
    weights = (f"`hf+kv compact` runs the SFT adapter `{args.adapter}` merged into the base "
               f"weights (`bf16`: the merged weights in bfloat16)." if args.adapter
               else "Base weights (no SFT adapter yet): the compact "
               "prompt's completions are those of the base model.")
    notes = (
        f"Script: `benchmarks/bench_particle_step.py --tasks {args.tasks} --steps {args.steps} "
        f"--q {args.q}{threads_arg}`. TextCraft depth-2 train tasks "
        f"{', '.join(info['tasks'])}; per task and N the particles' histories are fixed "
        f"first (planner action with probability "
        f"{args.q}, else a random valid action; uniform resampling after every step), then "
        f"each prior plays them in turn. A step is N concurrent `propose` calls, first call to "
        f"last answer, mean over {args.tasks} tasks x {args.steps} steps; `step / embedded` "
        f"divides by the embedded prior's step at the same N in this run. `CPU s` is this "
        f"process's CPU time over the steps (plus the llama.cpp server process's for "
        f"`embedded`) per particle-step: at best (both cores busy throughout) a step on 2 "
        f"quiet cores takes N x CPU s / 2. `tokens computed` "
        f"is what ran through the model (KV reuse: the prompt less its reused prefix; "
        f"embedded: not measured, the whole prompt is shown). {weights} torch threads: "
        f"{_threads()}. KV entry: {info['entry_bytes_per_token'] or 0:.0f} bytes per token, "
        f"peak cache {info['peak_cache_mb']:.0f} MiB. Load average before: "
        f"{load_before:.1f}, after: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores "
        f"(shared machine); {time.time() - t0:.0f} s in all.")
    print(notes)
    if not args.no_write:
        bf16 = "hf+kv compact bf16" in args.priors
        name = "particle-step" + (f"-{args.threads}-thread" if args.threads else "") + (
            "-adapter" if args.adapter else "") + ("-bf16" if bf16 else "")
        title = "LLM prior: particle-step cost (KV reuse, compact prompt)" + (
            f", {args.threads} thread(s)" if args.threads else "") + (
            ", SFT adapter" if args.adapter else "") + (", float32 and bfloat16" if bf16 else "")
        write_section(name, title, notes + "\n\n" + text)


def _threads() -> int:
    import torch

    return torch.get_num_threads()


if __name__ == "__main__":
    main()
