"""Benchmark the prior's concurrency and the embedded model's throughput.

1. Concurrency: a loopback OpenAI-compatible server answers every call after a fixed 200 ms.
   One SMC step = N concurrent proposals through one OpenAIPrior (shared client, limiter).
   We report the step's wall time divided by one call's latency (goal <= 1.15 at N = 15).
2. Embedded throughput: the bundled Gemma-3-270M on llama.cpp, sequential menu-prompt
   proposals on a TextCraft-like state: completion tokens per second and seconds per proposal.

Run: ``python benchmarks/bench_priors.py [--skip-embedded]``; results go to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from amc.priors.embedded import EmbeddedOptions, EmbeddedPrior, EmbeddedServer
from amc.priors.loopback import free_port
from amc.priors.openai import OpenAIOptions, OpenAIPrior
from amc.types import History, Usage
from benchmarks._report import md_table, write_section

OBS = ("Crafting commands:\ncraft 4 oak planks using 1 oak log\ncraft 4 stick using 2 oak planks\n"
       "craft 1 crafting table using 4 oak planks\n\nGoal: craft crafting table.")
MENU = ("inventory", "get 1 oak log", "get 1 ink sac")
H = History("bench", OBS, valid_actions=MENU)
DELAY_S = 0.2


@contextlib.contextmanager
def loopback_process(delay_s: float) -> Iterator[str]:
    """The toy server in its own process (a remote API does not share our CPU)."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "amc.priors.loopback", "--port", str(port),
                             "--delay-s", str(delay_s)], start_new_session=True)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                    break
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("loopback server did not start")
            time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


async def concurrency(reps: int) -> list[list[object]]:
    rows: list[list[object]] = []
    with loopback_process(DELAY_S) as url:
        p = OpenAIPrior(OpenAIOptions(base_url=url, model="toy", prompt="menu", cache=False,
                                      max_in_flight=256), env="textcraft")
        # Warm the connection pool to its widest (a long run keeps its connections open).
        await asyncio.gather(*(p.propose(H, np.random.default_rng(i)) for i in range(64)))
        single = []
        for i in range(reps * 2):
            t0 = time.perf_counter()
            await p.propose(H, np.random.default_rng(i))
            single.append(time.perf_counter() - t0)
        lat = statistics.median(single)
        for n in (1, 15, 64):
            p.limiter.peak_in_flight = 0
            walls = []
            for r in range(reps):
                t0 = time.perf_counter()
                await asyncio.gather(*(p.propose(H, np.random.default_rng([r, i]))
                                       for i in range(n)))
                walls.append(time.perf_counter() - t0)
            wall = statistics.median(walls)
            rows.append([n, f"{lat * 1000:.0f}", f"{wall * 1000:.0f}", f"{wall / lat:.2f}",
                         p.limiter.peak_in_flight])
        await p.aclose()
    return rows


async def embedded(calls: int) -> list[list[object]]:
    rows: list[list[object]] = []
    cache = Path(__file__).resolve().parent.parent / ".cache"
    with EmbeddedServer("gemma-3-270m", cache_dir=cache) as srv:
        for label, prompt in (("menu (few-shot, completions)", "menu"),
                              ("react (few-shot, completions)", "react")):
            p = EmbeddedPrior(EmbeddedOptions(base_url=srv.url, prompt=prompt, cache=False),
                              env="textcraft")
            await p.propose(H, np.random.default_rng(999))  # first call fills the prefix cache
            before = p.ledger.run
            t0 = time.perf_counter()
            turns = [await p.propose(H, np.random.default_rng(i)) for i in range(calls)]
            wall = time.perf_counter() - t0
            used = p.ledger.run + negated(before)
            in_menu = sum(t.action in MENU for t in turns)
            rows.append([label, calls, f"{wall / calls:.2f}",
                         f"{used.completion_tokens / wall:.1f}",
                         f"{used.prompt_tokens // calls}", f"{in_menu}/{calls}"])
            await p.aclose()
    return rows


def negated(u: Usage) -> Usage:
    """A usage with every field negated (``a + negated(b)`` is the difference)."""
    return Usage(**{k: -v for k, v in u.to_dict().items()})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--skip-embedded", action="store_true")
    args = ap.parse_args()
    conc = asyncio.run(concurrency(args.reps))
    body = [
        f"Script: `benchmarks/bench_priors.py`. Loopback OpenAI-compatible server answering after "
        f"{DELAY_S * 1000:.0f} ms; one SMC step = N concurrent `OpenAIPrior.propose` calls "
        f"(median of {args.reps}). Goal: step / call <= 1.15 at N = 15. Load average during "
        f"the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (the machine is shared; "
        f"each call costs about 2 ms of client CPU and 0.6 ms of server CPU).",
        "",
        md_table(["N", "one call (ms)", "one step (ms)", "step / call", "peak in flight"], conc),
    ]
    if not args.skip_embedded:
        emb = asyncio.run(embedded(args.calls))
        body += [
            "",
            "Embedded prior (Gemma-3-270M Q4_K_M, llama.cpp portable build, one server slot, "
            "sequential calls after a warm-up call; prompt prefix reused by llama.cpp). "
            "`in menu` counts answers that are one of the listed valid actions.",
            "",
            md_table(["prompt", "calls", "s / call", "completion tok/s", "prompt tokens",
                      "in menu"], emb),
        ]
    text = "\n".join(body)
    print(text)
    write_section("priors", "Priors: concurrency and embedded throughput", text)


if __name__ == "__main__":
    main()
