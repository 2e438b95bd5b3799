"""The OpenAI prior's client: N concurrent calls per SMC step, old and new client side by side.

A loopback OpenAI-compatible server in its own process answers every call after 200 ms. One
step = ``tasks`` tasks x N particles proposing at once through one prior (shared client,
limiter, ledger), as the runner does with tasks in flight. Both clients (the current
:class:`~amc.priors.openai.OpenAIPrior` and the frozen pre-issue-55 SDK client,
:mod:`benchmarks.legacy_prior`) run in the same process against the same server, their steps
interleaved rep by rep, so load changes hit both alike. Reported per client: one call's latency
(median of sequential calls), a step's median wall time, step / call, and client CPU per call
(this process's CPU time over the step runs / calls: the server runs elsewhere).

Where the client time goes: cProfile over steps of 64 particles with the response cache on (the
runner's default), each function's own time put in a phase by its file (built-ins by their
callers'); the shares are scaled to the CPU per call measured without the profiler. Waiting in
``epoll`` is idle time, not CPU, and is left out.

Used by ``benchmarks/bench_priors.py`` (section ``priors-client`` of docs/benchmarks.md).
"""

from __future__ import annotations

import asyncio
import cProfile
import os
import pstats
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from amc.priors.openai import OpenAIOptions, OpenAIPrior
from amc.types import History
from benchmarks._report import md_table
from benchmarks.legacy_prior import LegacyOpenAIPrior

CONFIGS = ((1, 1), (15, 1), (64, 1), (256, 1), (15, 4), (64, 4))
"""(N particles, tasks in flight) per step."""
GOALS = {15: 1.10, 64: 1.25}
"""Goal on step / call for one task of N particles (issue 55)."""
CPU_GOAL_MS = 0.5
CLIENTS = {"new": OpenAIPrior, "old": LegacyOpenAIPrior}
PHASES = (  # (phase, substrings of a function's file or name), first match wins
    ("request building", ("amc/priors/prompts.py", "build_request", "json/encoder")),
    ("HTTP client", ("aiohttp", "yarl", "multidict", "site-packages/openai/", "httpx", "httpcore",
                     "h11", "anyio", "sniffio", "pydantic", "selector_events", "transports.py",
                     "socket", "ssl", "copy.py", "email/", "urllib", "typing.py")),
    ("response parsing", ("json/decoder", "_read_response", "amc/priors/parsing.py",
                          "amc/envs/", "re/__init__")),
    ("ledger", ("amc/priors/ledger.py", "amc/types.py", "dataclasses.py")),
    ("cache", ("amc/priors/cache.py", "sqlite3", "hashlib", "amc/errors.py")),
    ("rng", ("numpy",)),
    ("logging", ("logging/",)),
    ("limiter, retries, event loop", ("amc/priors/transport.py", "amc/retry.py", "asyncio/",
                                      "contextvars", "threading.py")),
    ("propose / generate (their own lines)", ("amc/priors/openai.py",)),
    ("benchmark harness (gather, seeds)", ("benchmarks/",)),
)


def phase_of(func: tuple[str, int, str]) -> str | None:
    """The phase of a profiled function (``None`` for idle waiting); 'other' if unknown."""
    filename, _, name = func
    if "poll' of 'select" in name:
        return None
    where = f"{filename}:{name}"
    return next((p for p, keys in PHASES if any(k in where for k in keys)), "other")


def phase_seconds(stats: pstats.Stats) -> dict[str, float]:
    """Own time per phase; a built-in's time goes to its callers' phases pro rata."""
    out: dict[str, float] = defaultdict(float)
    raw = stats.stats  # type: ignore[attr-defined]
    for func, (_, _, tt, _, callers) in raw.items():
        if func[0] != "~" or not callers or phase_of(func) is None:
            ph = phase_of(func)
            if ph is not None:
                out[ph] += tt
            continue
        total = sum(edge[2] for edge in callers.values()) or 1.0
        for caller, edge in callers.items():
            out[phase_of(caller) or "other"] += tt * edge[2] / total
    return out


def histories(n: int, tasks: int, h: History) -> list[History]:
    return [History(f"task-{k}", h.observation, valid_actions=h.valid_actions)
            for k in range(tasks) for _ in range(n)]


def cpu_of(pid: int | None) -> float:
    """CPU seconds (user + system) process ``pid`` has used; 0 when not known."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def step(p: OpenAIPrior, hs: list[History], key: list[int],
               server: int | None = None) -> tuple[float, float, float]:
    """(wall s, this process's CPU s, the server's CPU s) of one step: all propose at once."""
    s0, c0, t0 = cpu_of(server), time.process_time(), time.perf_counter()
    turns = await asyncio.gather(*(p.propose(h, np.random.default_rng([*key, i]))
                                   for i, h in enumerate(hs)))
    wall, cpu, scpu = time.perf_counter() - t0, time.process_time() - c0, cpu_of(server) - s0
    failed = [t.error for t in turns if t.error]
    if failed:  # a benchmark of failed calls measures nothing
        raise RuntimeError(f"{len(failed)} of {len(turns)} calls failed: {failed[0]}")
    return wall, cpu, scpu


def make(kind: str, url: str, cache_path: str | None = None) -> OpenAIPrior:
    opts = OpenAIOptions(base_url=url, model="toy", prompt="menu", cache=cache_path is not None,
                         cache_path=cache_path, max_in_flight=1024)
    return CLIENTS[kind](opts, env="textcraft")


async def side_by_side(url: str, h: History, reps: int,
                       server: int | None = None) -> list[list[object]]:
    """One row per (config, client): call, step, step / call, client and server CPU per call,
    peak in flight; the last row: both clients' CPU per call over every step."""
    priors = {k: make(k, url) for k in CLIENTS}
    for p in priors.values():  # warm each pool to its widest (a run keeps connections open)
        await step(p, histories(256, 1, h), [0])
    lat = {}
    for k, p in priors.items():
        single = [(await step(p, [h], [1, i]))[0] for i in range(2 * reps)]
        lat[k] = statistics.median(single)
    walls: dict[tuple[int, int, str], list[float]] = defaultdict(list)
    cpus: dict[tuple[int, int, str], list[float]] = defaultdict(list)
    srv: dict[tuple[int, int, str], list[float]] = defaultdict(list)
    peak: dict[tuple[int, int, str], int] = {}
    for r in range(reps):
        for n, tasks in CONFIGS:
            for k, p in (priors.items() if r % 2 == 0 else reversed(priors.items())):
                assert p.limiter is not None
                p.limiter.peak_in_flight = 0
                wall, cpu, scpu = await step(p, histories(n, tasks, h), [2, r, n, tasks],
                                             server)
                walls[(n, tasks, k)].append(wall)
                cpus[(n, tasks, k)].append(cpu)
                srv[(n, tasks, k)].append(scpu)
                peak[(n, tasks, k)] = p.limiter.peak_in_flight
    for p in priors.values():
        await p.aclose()
    rows: list[list[object]] = []
    for n, tasks in CONFIGS:
        for k in CLIENTS:
            wall = statistics.median(walls[(n, tasks, k)])
            calls = reps * n * tasks
            goal = GOALS.get(n) if tasks == 1 else None
            rows.append([n, tasks, k, f"{lat[k] * 1000:.0f}", f"{wall * 1000:.0f}",
                         f"{wall / lat[k]:.2f}", "" if goal is None else f"<= {goal:.2f}",
                         f"{1000 * sum(cpus[(n, tasks, k)]) / calls:.2f}",
                         f"{1000 * sum(srv[(n, tasks, k)]) / calls:.2f}", peak[(n, tasks, k)]])
    calls = reps * sum(n * tasks for n, tasks in CONFIGS)
    for k in CLIENTS:
        rows.append(["all", "", k, "", "", "", f"<= {CPU_GOAL_MS}" if k == "new" else "",
                     f"{1000 * sum(sum(v) for c, v in cpus.items() if c[2] == k) / calls:.2f}",
                     f"{1000 * sum(sum(v) for c, v in srv.items() if c[2] == k) / calls:.2f}",
                     ""])
    return rows


async def profile(url: str, h: History, n: int, steps: int) -> dict[str, tuple[float, dict]]:
    """Per client: (CPU ms per call without the profiler, ms per call by phase)."""
    out = {}
    for k in CLIENTS:
        with tempfile.TemporaryDirectory() as tmp:
            p = make(k, url, str(Path(tmp) / "responses.sqlite"))
            await step(p, histories(n, 1, h), [3])  # warm the pool (these calls are cached)
            cpu = sum([(await step(p, histories(n, 1, h), [4, s]))[1] for s in range(steps)])
            prof = cProfile.Profile()
            prof.enable()
            for s in range(steps):
                await step(p, histories(n, 1, h), [5, s])
            prof.disable()
            await p.aclose()
        per_phase = phase_seconds(pstats.Stats(prof))
        total = sum(per_phase.values()) or 1.0
        ms = 1000 * cpu / (n * steps)
        out[k] = (ms, {ph: ms * s / total for ph, s in per_phase.items()})
    return out


def profile_table(prof: dict[str, tuple[float, dict]]) -> str:
    names = [p for p, _ in PHASES] + ["other"]
    rows: list[list[object]] = [[ph, *(f"{prof[k][1].get(ph, 0.0):.3f}" for k in CLIENTS)]
                                for ph in names]
    rows.append(["**total (measured without the profiler)**",
                 *(f"**{prof[k][0]:.3f}**" for k in CLIENTS)])
    return md_table(["phase", *(f"{k} client (ms CPU / call)" for k in CLIENTS)], rows)


def verdict(rows: list[list[object]]) -> str:
    """One line: the goals, met or not, for the new client (from the table's own figures)."""
    parts = []
    for r in rows:
        n, tasks, k = r[0], r[1], r[2]
        if k == "new" and tasks == 1 and n in GOALS:
            ok = float(str(r[5])) <= GOALS[int(str(n))]
            parts.append(f"N = {n}: {r[5]} ({'met' if ok else 'not met'})")
    cpu = next(float(str(r[7])) for r in rows if r[0] == "all" and r[2] == "new")
    parts.append(f"client CPU {cpu:.2f} ms per call over every step of the table "
                 f"({'met' if cpu <= CPU_GOAL_MS else 'not met'}, goal <= {CPU_GOAL_MS})")
    return "New client against the goals: " + "; ".join(parts) + "."


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"{one:.1f} (1 min) / {five:.1f} (5 min) on {os.cpu_count()} cores"
