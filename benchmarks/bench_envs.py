"""Environment step and fork latency: in process vs `amc serve-env` over HTTP vs replay forks.

Run: ``python benchmarks/bench_envs.py [--reps 30]``. Starts one TextCraft server on a free
loopback port, then measures, side by side in one run, for histories of 5, 10 and 20 steps:

- ``step``: one action (in process; through the AgentGym client and the server);
- ``fork``: an in-process copy; the server's ``/fork``; a verified replay of the history on a
  fresh server env (what AgentGym servers without ``/fork`` cost, per resampled particle).

Medians in milliseconds; the section ``envs`` of docs/benchmarks.md is replaced.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from amc.envs.agentgym.client import AgentGymOptions, AgentGymSuite  # noqa: E402
from amc.envs.agentgym.process import ServerProcess, spawn_env_server  # noqa: E402
from amc.envs.textcraft.env import TextCraftOptions, TextCraftSuite  # noqa: E402
from benchmarks._report import md_table, write_section  # noqa: E402

TASK = "wooden pickaxe"
HISTORY = ["get 1 oak log", "inventory"]  # valid, never finishes the episode


def median_ms(fn, reps: int, inner: int = 1) -> float:
    """Median over ``reps`` batches of the mean time of ``inner`` calls, in milliseconds."""
    out = []
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(inner):
            fn()
        out.append((time.perf_counter() - t) * 1e3 / inner)
    return statistics.median(out)


def start_server() -> ServerProcess:
    return spawn_env_server("textcraft", max_envs=1024, cwd=ROOT)


def prepared(suite, h: int):
    env = suite.make()
    env.reset(TASK)
    for i in range(h):
        env.step(HISTORY[i % 2])
    return env


def fork_and_close(env) -> None:
    env.fork().close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=30)
    args = ap.parse_args()
    srv = start_server()
    url = srv.url
    local = TextCraftSuite(TextCraftOptions())
    http = AgentGymSuite(AgentGymOptions(base_url=url, fork="server"))
    replay = AgentGymSuite(AgentGymOptions(base_url=url, fork="replay"))
    rows = []
    try:
        for h in (5, 10, 20):
            e_local, e_http, e_replay = prepared(local, h), prepared(http, h), prepared(replay, h)
            step_local = median_ms(lambda e=e_local: e.fork().step("inventory"), args.reps, 1000)
            step_http = median_ms(lambda e=e_http: e.step("inventory"), args.reps)
            # keep the recorded history at length h for the fork measurements
            e_http.records = e_http.records[:h]
            e_replay.records = list(e_http.records)
            fork_local = median_ms(lambda e=e_local: e.fork(), args.reps, 1000)
            fork_http = median_ms(lambda e=e_http: fork_and_close(e), args.reps)
            fork_replay = median_ms(lambda e=e_replay: fork_and_close(e), args.reps)
            rows.append([h, f"{step_local * 1e3:.1f} µs", f"{step_http:.2f}",
                         f"{fork_local * 1e3:.1f} µs",
                         f"{fork_http:.2f}", f"{fork_replay:.2f}",
                         f"{fork_replay / fork_http:.1f}x"])
            for e in (e_http, e_replay):
                e.close()
    finally:
        http.close()
        replay.close()
        srv.stop()
    body = (
        "`python -m benchmarks.bench_envs` -- TextCraft (`wooden pickaxe`, 10 distractors), "
        f"median of {args.reps} calls (in process: of {args.reps} batches of 1000 calls), "
        "milliseconds unless marked. HTTP = the AgentGym client against "
        "`amc serve-env textcraft` on loopback; replay = fresh server env + reset + h verified "
        "steps (what a server without `/fork` costs per resampled particle); both HTTP forks "
        "include closing the new env. The in-process step includes an in-process fork.\n\n"
        + md_table(["history h", "step in-process (incl. fork)", "step HTTP", "fork in-process",
                    "fork HTTP /fork", "fork HTTP replay", "replay / fork"], rows)
    )
    write_section("envs", "Environment step and fork latency (TextCraft)", body)
    print(body)


if __name__ == "__main__":
    main()
