"""SciWorld environment costs: step, fork by replay (cold JVM vs pooled), memory per JVM.

Run from the repository root: ``python benchmarks/bench_sciworld.py [--repeats 3]``.
Writes the ``sciworld`` section of docs/benchmarks.md.

- *step*: one ``SciWorldEnv.step`` on a warm simulator (raw simulator calls, no valid-action
  enumeration).
- *cold fork*: what the reference implementation pays per resampled particle -- start a new
  JVM, load the game, replay the history (here also verified).
- *pooled fork*: the same on a warm simulator from the pool (load + verified replay).
- *valid_actions*: the optional, lazy enumeration of every valid action.
- *memory*: resident size of one simulator JVM with the default ``-Xmx384m``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from amc.envs.sciworld.env import SciWorldEnv, SciWorldOptions, SciWorldSuite
from benchmarks._report import md_table, write_section

GAME = "536"  # use-thermometer (test split): 19 gold actions to the goal
HISTORIES = (5, 10, 20)


def _ms(f) -> float:  # type: ignore[no-untyped-def]
    t = time.perf_counter()
    f()
    return 1000 * (time.perf_counter() - t)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3, help="measurements per figure (median)")
    args = ap.parse_args()

    suite = SciWorldSuite(SciWorldOptions(pool_size=4, max_steps=100))
    try:
        gold = suite.gold_actions(GAME)
        actions = [*gold[:18], "look around", "inventory"]  # 20 actions, episode not over
        parent: SciWorldEnv = suite.make()
        parent.reset(GAME)
        cold: dict[int, list[float]] = {}
        done = 0
        for h in HISTORIES:  # cold: every fork starts its own JVM, as the reference does
            for a in actions[done:h]:
                parent.step(a)
            done = h
            cold[h] = []
            for _ in range(args.repeats):
                suite.pool.trim(0)
                t = time.perf_counter()
                parent.fork().close()
                cold[h].append(1000 * (time.perf_counter() - t))
        # pooled: one warm simulator waits in the pool (JIT warmed by a few forks first)
        history = list(parent.records)
        warm: dict[int, list[float]] = {}
        for h in (*HISTORIES, *HISTORIES):
            parent.records = tuple(history[:h])
            times = []
            for _ in range(args.repeats):
                t = time.perf_counter()
                parent.fork().close()
                times.append(1000 * (time.perf_counter() - t))
            warm[h] = times  # the second pass (warm JIT) is kept
        parent.records = tuple(history)
        for _ in range(2):  # steps on a warm simulator, idle machine apart from this script
            parent.reset(GAME)
            step_ms = [_ms(lambda a=a: parent.step(a)) for a in actions]
        rows = [[h, f"{statistics.median(cold[h]):.0f}", f"{statistics.median(warm[h]):.0f}",
                 f"{statistics.median(cold[h]) / statistics.median(warm[h]):.1f}x"]
                for h in HISTORIES]
        va = [_ms(parent.valid_actions) for _ in range(args.repeats)]
        n_valid = len(parent.valid_actions() or [])
        rss = [s.rss_bytes() / 2**20 for s in suite.pool.simulators()]
        parent.close()
    finally:
        suite.close()

    body = "\n\n".join([
        f"Game {GAME} (use-thermometer), default options (`-Xmx384m`, deterministic), "
        f"median of {args.repeats}; "
        "`benchmarks/bench_sciworld.py`.",
        md_table(["history (actions)", "cold fork: new JVM + load + replay (ms)",
                  "pooled fork: load + replay (ms)", "pool speed-up"], rows),
        md_table(["measure", "value"], [
            ["step, median over 20 steps (ms)", f"{statistics.median(step_ms):.1f}"],
            ["step, 90th percentile (ms)",
             f"{statistics.quantiles(step_ms, n=10)[-1]:.1f}"],
            [f"valid_actions ({n_valid} actions) (ms)", f"{statistics.median(va):.0f}"],
            ["JVM resident memory per simulator (MB)", f"{statistics.mean(rss):.0f}"
             if rss else "n/a"],
        ]),
        "A fork loads the game and replays (and checks) every recorded action; the cold fork "
        "also starts a JVM, as the reference implementation does for every resampled "
        "particle. Each particle holds one simulator while the pool has room; beyond "
        "`pool_size` particles take turns and pay a pooled fork when they get one back. "
        "Figures are noisy: the machine is shared.",
    ])
    print(body)
    write_section("sciworld", "SciWorld environment (in-process ScienceWorld)", body)


if __name__ == "__main__":
    main()
