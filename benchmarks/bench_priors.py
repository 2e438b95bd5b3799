"""Benchmark the prior's concurrency and the embedded model's batched throughput.

1. The API client (:mod:`benchmarks.prior_client`): a loopback OpenAI-compatible server in its
   own process answers every call after a fixed 200 ms. One SMC step = tasks x N concurrent
   proposals through one OpenAIPrior (shared client, limiter), N in {1, 15, 64, 256}, the
   current client and the one before issue 55 side by side in one run: a step's wall time over
   one call's (goal <= 1.10 at N = 15, <= 1.25 at N = 64), client CPU per call, and a profile
   of where that CPU goes. Section ``priors-client`` of docs/benchmarks.md.
2. Embedded servers side by side: the bundled Gemma-3-270M on llama.cpp's C++ ``llama-server``
   (``parallel`` slots, continuous batching) and on llama-cpp-python's one-slot Python server.
   For N in {1, 4, 8, 15}, N particles take ``--steps`` SMC-like steps on a TextCraft-like
   task (menu prompt; each particle's history grows by its own action), all N proposals of a
   step in flight at once. Reported: a step's mean wall time over one call's (the N = 1 step
   on the same server; goal <= 4 at N = 15 with the C++ server, on 2 cores), completion
   tokens per second in total, and the prefix-cache hit rate (prompt tokens the server did
   not recompute, from ``usage.prompt_tokens_details.cached_tokens``).
   Where the time goes (C++ server): the server's own timings (``/completion``) give its
   prefill rate (a fresh prompt, nothing cached) and its decoding rate with 1 and with N
   sequences in the batch; with the uncached prompt tokens a particle brings per step (from
   the step runs) they predict step / call from throughput alone.
3. Order independence (C++ server): the same (prompt, seed) sampled alone and in a batch with
   other prompts; how many completions are identical.

Run: ``python benchmarks/bench_priors.py [--skip-embedded]``; results go to docs/benchmarks.md
(``--skip-embedded`` leaves the embedded servers' section as it is).
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

from amc.ports import free_port
from amc.priors.embedded import EmbeddedOptions, EmbeddedPrior, EmbeddedServer
from amc.types import History, Step, Usage
from benchmarks import prior_client
from benchmarks._report import md_table, write_section

OBS = ("Crafting commands:\ncraft 4 oak planks using 1 oak log\ncraft 4 stick using 2 oak planks\n"
       "craft 1 crafting table using 4 oak planks\n\nGoal: craft crafting table.")
MENU = ("inventory", "get 1 oak log", "get 1 ink sac")
H = History("bench", OBS, valid_actions=MENU)
DELAY_S = 0.2


SERVERS = {"lean": "benchmarks.lean_server", "fastapi": "tests.priors.loopback"}
"""The toy model's servers: aiohttp's (lean, the default) or the tests' FastAPI one."""


@contextlib.contextmanager
def loopback_process(delay_s: float, server: str = "lean") -> Iterator[tuple[str, int]]:
    """The toy server in its own process (a remote API does not share our CPU)."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", SERVERS[server], "--port", str(port),
                             "--delay-s", str(delay_s)], start_new_session=True,
                            cwd=Path(__file__).resolve().parent.parent)
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
        yield url, proc.pid
    finally:
        proc.terminate()
        proc.wait(timeout=10)


async def concurrency(reps: int, profile_steps: int,
                      server: str) -> tuple[list[list[object]], dict]:
    """The API client, old and new side by side (:mod:`benchmarks.prior_client`)."""
    with loopback_process(DELAY_S, server) as (url, pid):
        rows = await prior_client.side_by_side(url, H, reps, pid)
        prof = await prior_client.profile(url, H, 64, profile_steps)
    return rows, prof


def client_section(rows: list[list[object]], prof: dict, reps: int, steps: int,
                   load_before: str, server: str) -> str:
    """The ``priors-client`` section of docs/benchmarks.md."""
    return "\n".join([
        f"Script: `benchmarks/bench_priors.py` (`benchmarks/prior_client.py`). A loopback "
        f"OpenAI-compatible server (`{SERVERS[server]}`) in its own process answers every "
        f"call after "
        f"{DELAY_S * 1000:.0f} ms. One step = `tasks` x N concurrent `OpenAIPrior.propose` "
        f"calls through one prior (median of {reps} steps per row); `new` is the current "
        f"client (one aiohttp keep-alive pool), `old` the client before issue 55 (the OpenAI "
        f"SDK's `post`, frozen in `benchmarks/legacy_prior.py`; everything else, prompt, "
        f"parsing, ledger, cache, is shared), both in this one run, their steps "
        f"interleaved. `step / call` divides by that client's own median sequential call; "
        f"`CPU / call` is this process's CPU time over the step runs / calls, `server CPU / "
        f"call` the server process's (it shares the machine's {os.cpu_count()} cores with "
        f"the client: a remote API would not; read from /proc in "
        f"{1000 // os.sysconf('SC_CLK_TCK')} ms ticks, so coarse at N = 1). Response cache "
        f"off. Load average before the "
        f"run: {load_before}; after: {prior_client.load()}.",
        "",
        md_table(["N", "tasks", "client", "one call (ms)", "one step (ms)", "step / call",
                  "goal", "CPU / call (ms)", "server CPU / call (ms)", "peak in flight"], rows),
        "",
        prior_client.verdict(rows),
        "",
        f"Where the client's CPU goes per call: cProfile over {steps} steps of 64 particles "
        f"(one task), response cache on (the runner's default; every call a miss and a "
        f"write), each function's own time put in a phase by its module (built-ins by their "
        f"callers'), scaled to the CPU per call measured over the same steps without the "
        f"profiler. Idle waiting (`epoll`) is not CPU and is left out.",
        "",
        prior_client.profile_table(prof),
    ])


def observe(action: str, t: int) -> str:
    """The task's answer to ``action`` (deterministic; only the prompt's growth matters)."""
    if action == "inventory":
        return f"Inventory: [oak log] ({t})" if t else "Inventory: empty"
    if action.startswith("get 1 "):
        return f"Got 1 {action[6:]}"
    return f"Could not execute {action}"


async def smc_steps(p: EmbeddedPrior, n: int, steps: int) -> tuple[list[float], Usage]:
    """Wall time of each of ``steps`` steps of ``n`` particles, and the usage they caused."""
    hs = [H] * n
    before = p.ledger.run
    walls = []
    for t in range(steps):
        t0 = time.perf_counter()
        turns = await asyncio.gather(*(p.propose(h, np.random.default_rng([n, t, i]))
                                       for i, h in enumerate(hs)))
        walls.append(time.perf_counter() - t0)
        hs = [h.extend(Step(turn.raw_text, turn.action, observe(turn.action, t), 0.0, False))
              .with_valid_actions(MENU) for h, turn in zip(hs, turns, strict=True)]
    return walls, p.ledger.run + negated(before)


def rss_mb(pid: int) -> float:
    """Resident memory of a process (MB)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


PerCall = dict[tuple[str, int], tuple[float, float]]
"""(server, N) -> (uncached prompt tokens, completion tokens) per proposal."""


async def servers(ns: tuple[int, ...], steps: int, backends: tuple[str, ...],
                  python_ns: tuple[int, ...]) -> tuple[list[list[object]], PerCall]:
    rows: list[list[object]] = []
    per_call: PerCall = {}
    cache = Path(__file__).resolve().parent.parent / ".cache"
    for backend in backends:
        with EmbeddedServer("gemma-3-270m", backend=backend, parallel=max(ns),  # type: ignore[arg-type]
                            cache_dir=cache) as srv:
            p = EmbeddedPrior(EmbeddedOptions(base_url=srv.url, cache=False,
                                              max_in_flight=max(ns)), env="textcraft")
            await p.propose(H, np.random.default_rng(999))  # warm-up: model pages, prefix
            call = None
            for n in python_ns if backend == "python" else ns:
                walls, used = await smc_steps(p, n, steps)
                step = statistics.mean(walls)
                call = step if n == 1 else call
                calls = n * steps
                per_call[(backend, n)] = ((used.prompt_tokens - used.cached_tokens) / calls,
                                          used.completion_tokens / calls)
                rows.append([backend, n, f"{step:.2f}", f"{step / call:.2f}" if call else "",
                             f"{used.completion_tokens / sum(walls):.1f}",
                             "not reported" if backend == "python" else
                             f"{used.cached_tokens / max(1, used.prompt_tokens):.0%}",
                             f"{rss_mb(srv.proc.pid):.0f}" if srv.proc else ""])
            await p.aclose()
    return rows, per_call


async def completion(client: httpx.AsyncClient, url: str, prompt: str, n_predict: int,
                     cache: bool, seed: int) -> dict[str, float]:
    """One ``/completion`` call of llama-server; its ``timings`` (ms, token counts)."""
    r = await client.post(url, json={"prompt": prompt, "n_predict": n_predict, "seed": seed,
                                     "cache_prompt": cache, "ignore_eos": True,
                                     "temperature": 1.0})
    r.raise_for_status()
    return dict(r.json()["timings"])


async def time_budget(n: int, decode_tokens: int = 32) -> dict[str, float]:
    """llama-server's prefill tokens/s (fresh prompt) and decoding tokens/s at batch 1 and n."""
    from amc.priors.prompts import completion_prompt

    cache = Path(__file__).resolve().parent.parent / ".cache"
    prompt = completion_prompt(H, "textcraft", "menu")
    with EmbeddedServer("gemma-3-270m", backend="cpp", parallel=n, cache_dir=cache) as srv:
        url = f"http://127.0.0.1:{srv.port}/completion"
        async with httpx.AsyncClient(timeout=600) as c:
            pre = [await completion(c, url, f"{i}\n{prompt}", 1, False, i) for i in range(3)]
            out: dict[str, float] = {
                "prompt_tokens": pre[0]["prompt_n"],
                "prefill_tps": statistics.median(t["prompt_per_second"] for t in pre)}
            for b in (1, n):
                # every slot of the batch gets the prompt cached first: only decoding is timed
                await asyncio.gather(*(completion(c, url, prompt, 1, True, i) for i in range(b)))
                ts = await asyncio.gather(*(completion(c, url, prompt, decode_tokens, True, i)
                                            for i in range(b)))
                # the b sequences decode together: the batch lasts about the longest decoding
                decoding_s = max(t["predicted_ms"] for t in ts) / 1000
                out[f"decode_tps_{b}"] = sum(t["predicted_n"] for t in ts) / decoding_s
    return out


def floor_line(budget: dict[str, float], rows: list[list[object]], n: int,
               uncached: dict[int, float], completion_per_call: dict[int, float]) -> str:
    """Step / call that the server's rates predict, beside the measured one."""
    def cost(k: int, rate: float) -> float:
        return (k * uncached[k] / budget["prefill_tps"]
                + k * completion_per_call[k] / rate)
    floor = cost(n, budget[f"decode_tps_{n}"]) / cost(1, budget["decode_tps_1"])
    measured = next((r[3] for r in rows if r[0] == "cpp" and r[1] == n), "n/a")
    return (f"Where the time goes (cpp): prefill {budget['prefill_tps']:.0f} prompt tokens/s "
            f"(a fresh {budget['prompt_tokens']:.0f}-token menu prompt), decoding "
            f"{budget['decode_tps_1']:.1f} tokens/s with 1 sequence and "
            f"{budget[f'decode_tps_{n}']:.1f} with {n} in the batch. Per particle and step the "
            f"server had to prefill {uncached[n]:.0f} uncached prompt tokens (N = {n}; "
            f"{uncached[1]:.0f} at N = 1) and decode {completion_per_call[n]:.1f} tokens: these "
            f"rates predict a step of {n} at about {floor:.1f}x a call (measured: {measured}). "
            f"A batch of {n} decodes {budget[f'decode_tps_{n}'] / budget['decode_tps_1']:.1f}x "
            f"as fast as one sequence (it would be near {n}x if decoding were bound by reading "
            f"the weights): on {os.cpu_count()} cores batching gains little, so a step of {n} "
            f"cannot come near one call's time. "
            f"The uncached tokens are the particle's own new history and the action menu after "
            f"it, which no prefix cache can share between particles.")


async def order_independence(reps: int, batch: int) -> tuple[int, int]:
    """How often a (prompt, seed) gives the same text alone and amid ``batch - 1`` others."""
    cache = Path(__file__).resolve().parent.parent / ".cache"
    same = 0
    with EmbeddedServer("gemma-3-270m", backend="cpp", parallel=batch, cache_dir=cache) as srv:
        p = EmbeddedPrior(EmbeddedOptions(base_url=srv.url, cache=False, max_in_flight=batch),
                          env="textcraft")
        for r in range(reps):
            h = H.extend(Step("", "inventory", observe("inventory", r), 0.0, False))
            h = h.with_valid_actions(MENU)
            alone = await p.propose(h, np.random.default_rng([r, 0]))
            others = [H.extend(Step("", a, observe(a, 0), 0.0, False)).with_valid_actions(MENU)
                      for a in MENU for _ in range(batch)][:batch - 1]
            turns = await asyncio.gather(
                *(p.propose(o, np.random.default_rng([r, 1, i])) for i, o in enumerate(others)),
                p.propose(h, np.random.default_rng([r, 0])))
            same += turns[-1].raw_text == alone.raw_text
        await p.aclose()
    return same, reps


def speedups(rows: list[list[object]]) -> str:
    """One line: cpp's total completion tokens/s over python's, per N both measured."""
    rate = {(str(r[0]), int(str(r[1]))): float(str(r[4])) for r in rows}
    parts = [f"N = {n}: {rate[('cpp', n)] / rate[('python', n)]:.1f}x"
             for (b, n) in rate if b == "cpp" and ("python", n) in rate and rate[("python", n)]]
    return ("Total completion tokens/s, cpp over python (goal >= 3x): " + ", ".join(parts)
            + ".") if parts else ""


def negated(u: Usage) -> Usage:
    """A usage with every field negated (``a + negated(b)`` is the difference)."""
    return Usage(**{k: -v for k, v in u.to_dict().items()})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--profile-steps", type=int, default=15)
    ap.add_argument("--server", choices=sorted(SERVERS), default="lean",
                    help="the toy model's HTTP server for the client benchmark")
    ap.add_argument("--ns", default="1,4,8,15", help="particle counts N, comma-separated")
    ap.add_argument("--steps", type=int, default=4, help="SMC-like steps per N")
    ap.add_argument("--servers", default="cpp,python", help="llama.cpp servers to compare")
    ap.add_argument("--order-reps", type=int, default=8)
    ap.add_argument("--python-ns", default=None, help="N for the python server (default --ns)")
    ap.add_argument("--skip-embedded", action="store_true")
    args = ap.parse_args()
    load_before = prior_client.load()
    rows, prof = asyncio.run(concurrency(args.reps, args.profile_steps, args.server))
    client = client_section(rows, prof, args.reps, args.profile_steps, load_before, args.server)
    print(client)
    write_section("priors-client", "Priors: the API client, N concurrent calls (old and new)",
                  client)
    body: list[str] = []
    if not args.skip_embedded:
        ns = tuple(int(n) for n in args.ns.split(","))
        backends = tuple(args.servers.split(","))
        python_ns = tuple(int(n) for n in (args.python_ns or args.ns).split(","))
        emb, per_call = asyncio.run(servers(ns, args.steps, backends, python_ns))
        budget = asyncio.run(time_budget(max(ns))) if "cpp" in backends else None
        same, reps = (asyncio.run(order_independence(args.order_reps, max(ns)))
                      if "cpp" in backends and args.order_reps else (0, 0))
        body += [
            f"Embedded prior, both llama.cpp servers side by side (Gemma-3-270M Q4_K_M, portable "
            f"build, {os.cpu_count()} threads, menu prompt, max_tokens 64). One step = N "
            f"concurrent proposals of N particles on a TextCraft-like task; mean over "
            f"{args.steps} steps, each particle's history growing by its own action (the first "
            f"step of each N starts a fresh task: only the few-shot part is cached). `step / "
            f"call` divides by the N = 1 step on the same server (goal: <= 4 at N = 15 for "
            f"cpp). `prefix hit` = prompt tokens served from the KV cache. `RSS` = the "
            f"server's resident memory after the run. Load average: "
            f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores.",
            "",
            md_table(["server", "N", "step (s)", "step / call", "completion tok/s (total)",
                      "prefix hit", "RSS (MB)"], emb),
            "",
            speedups(emb),
            "",
            floor_line(budget, emb, max(ns),
                       {n: per_call[("cpp", n)][0] for n in (1, max(ns))},
                       {n: per_call[("cpp", n)][1] for n in (1, max(ns))})
            if budget and ("cpp", 1) in per_call else "",
            "",
            f"Order independence (cpp, {max(ns)} slots): the same (prompt, seed) sampled alone "
            f"and again amid {max(ns) - 1} other concurrent prompts gave the same completion in "
            f"{same} of {reps} cases.",
        ]
    if body:  # the embedded servers' section (the API client's is above)
        text = "\n".join(body)
        print(text)
        write_section("priors", "Priors: embedded throughput", text)


if __name__ == "__main__":
    main()
