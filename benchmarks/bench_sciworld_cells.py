"""SciWorld per-step cost as a sweep cell pays it: action menu, step, verified-replay fork.

The planner-mix prior's random branch draws from the action menu, so every particle step of a
SciWorld cell pays one ``valid_actions`` (enumerate every valid action) and one ``step``; every
resampled offspring pays one ``fork`` (load the game on a pooled JVM and replay, verified); the
planner pays the game's gold path once per game. Measured on game 3464 (find-non-living-thing,
7 gold actions) with the cells' pool of JVMs, under whatever else the machine runs (say so in
``--conditions``). Writes ``evidence/sciworld_cost.json`` (read by docs/evidence.md).

    python benchmarks/bench_sciworld_cells.py --conditions "2 shared cores, nice 10"
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from amc.envs.sciworld.env import SciWorldOptions, SciWorldSuite

GAME = "3464"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--conditions", required=True, help="machine load while measuring")
    ap.add_argument("--pool", type=int, default=2, help="simulator JVMs")
    ap.add_argument("--gold-games", type=int, default=40, help="test games timed for gold paths")
    ap.add_argument("--out", type=Path, default=Path("evidence/sciworld_cost.json"))
    args = ap.parse_args()
    t0 = time.perf_counter()
    suite = SciWorldSuite(SciWorldOptions(pool_size=args.pool, enumerate_actions=True))
    out: dict[str, object] = {"conditions": args.conditions, "pool_size": args.pool,
                              "game": GAME}
    games = suite.task_ids("test")[: args.gold_games]
    t = time.perf_counter()
    out["gold_lens_test"] = {g: len(suite.gold_actions(g)) for g in games}
    out["gold_s_per_task"] = (time.perf_counter() - t) / len(games)
    env = suite.make()
    t = time.perf_counter()
    env.reset(GAME)
    out["reset_s"] = time.perf_counter() - t
    step, menu, fork = [], [], []
    menu_len = 0
    for a in suite.gold_actions(GAME)[:-1]:
        t = time.perf_counter()
        menu_len = len(env.valid_actions() or ())
        menu.append(time.perf_counter() - t)
        t = time.perf_counter()
        env.step(a)
        step.append(time.perf_counter() - t)
        t = time.perf_counter()
        env.fork().close()
        fork.append(time.perf_counter() - t)
    out.update(step=step, menu=menu, fork=fork, menu_len=menu_len,
               startup_total=time.perf_counter() - t0)
    env.close()
    suite.close()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(args.out)


if __name__ == "__main__":
    main()
