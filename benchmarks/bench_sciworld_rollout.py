"""SciWorld: what one (task, seed) pair of a rollout-value cell costs, measured as a cell runs it.

The sweep cell's own parts (:mod:`studies.sweeps.cell`: the suite with the action menu on, the
planner-mix prior, the ``rollout`` value of the cell's budget, Best-of-N then AMC through
``run_task``) at the grid's SciWorld base (:data:`studies.sweeps.grid.GRIDS`: N, budget, every)
with M rollouts, on a few short test games of the committed task file. The rollout value forks
each scored state through SciWorld's restore (a verified JVM replay per rollout), so most of the
time is menus (every rollout step lists the valid actions) and forks. Per pair: wall seconds of
each method and prior calls (AMC's include its value's rollouts). Written after every pair to
``evidence/sciworld_rollout_cost.json`` as one run per q under ``runs`` (a run at another q is
kept; one at the same q is replaced); read by docs/evidence.md and by the grid's sizing of the
SciWorld ceiling cells.

    nice -n 10 python benchmarks/bench_sciworld_rollout.py --conditions "2 shared cores, nice 10"
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from amc.config import ValueConfig
from amc.priors.planner_mix import PlannerMixOptions, PlannerMixPrior, load_planner
from amc.smc.methods import parse_method
from amc.smc.sampler import run_task
from amc.value.simple import ZeroValue
from studies.sweeps.bench import make_bench_suite
from studies.sweeps.cell import ValueFactory, smc_config
from studies.sweeps.config import CellParams
from studies.sweeps.grid import GRIDS

REPO = Path(__file__).resolve().parent.parent


async def measure(args: argparse.Namespace, out: dict[str, Any], save: Any) -> None:
    base = GRIDS["sciworld"].base
    cell = CellParams(benchmark="sciworld", budget=base["budget"], every=base["every"],
                      schedule=base["schedule"], n=args.n, q=args.q, beta=args.beta,
                      value="rollout", rollouts=args.rollouts, split="test", seeds=(args.seed,),
                      task_file=str(REPO / "sweeps" / base["task_file"]))
    suite = make_bench_suite(cell)
    prior = PlannerMixPrior(suite, load_planner("sciworld"), PlannerMixOptions(q=cell.q))
    values = ValueFactory(cell, suite, prior)
    smc = smc_config(cell, base["budget"])
    methods = {m: parse_method(f"{m}@{cell.n}", smc, ValueConfig()).smc for m in ("bon", "smc")}
    for task in args.tasks:
        row: dict[str, Any] = {"task_id": task, "seed": args.seed,
                               "gold_len": len(suite.gold_actions(task))}
        for name, value in (("bon", ZeroValue()), ("amc", values(base["budget"]))):
            t = time.perf_counter()
            res = await run_task(suite=suite, prior=prior, value=value, task_id=task,
                                 smc=methods["bon" if name == "bon" else "smc"],
                                 seed=args.seed, method=name)
            row[name] = {"wall_s": round(time.perf_counter() - t, 1), "calls": res.usage.calls,
                         "oracle_best": float(res.metrics["oracle_best"])}
        out["pairs"].append(row)
        save()
        print(row, flush=True)
    await prior.aclose()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--conditions", required=True, help="machine load while measuring")
    ap.add_argument("--tasks", nargs="+", default=["3471", "3464"], help="test games")
    ap.add_argument("--q", type=float, default=0.6)
    ap.add_argument("--n", type=int, default=GRIDS["sciworld"].n[0])
    ap.add_argument("--rollouts", type=int, default=GRIDS["sciworld"].base["rollouts"])
    ap.add_argument("--beta", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=REPO / "evidence/sciworld_rollout_cost.json")
    args = ap.parse_args()
    out: dict[str, Any] = {"conditions": args.conditions, "q": args.q, "n": args.n,
                           "rollouts": args.rollouts, "beta": args.beta,
                           "budget": GRIDS["sciworld"].base["budget"],
                           "every": GRIDS["sciworld"].base["every"], "pairs": []}
    old = json.loads(args.out.read_text())["runs"] if args.out.is_file() else []
    runs = [r for r in old if r["q"] != args.q] + [out]

    def save() -> None:
        args.out.write_text(json.dumps({"runs": sorted(runs, key=lambda r: r["q"])},
                                       indent=1) + "\n")

    asyncio.run(measure(args, out, save))


if __name__ == "__main__":
    main()
