"""Throughput of the planner-mix prior and of Best-of-8 / SMC@8 with the Monte-Carlo value.

Two measurements, side by side in one run (the machine is shared and noisy):

1. Prior calls per second: ``planner-mix`` at q in {0, 0.4, 1} proposing along its own
   episodes on TextCraft (each call replays one new action through the prefix cache, as in
   the driver), timed around ``propose`` only; a first and a second episode per task.
2. Tasks per minute of ``bon@8`` and ``smc@8`` (the ``rollout`` value, M rollouts) on
   TextCraft depth-2 tasks in the end-to-end test's regime (q = 0.4, budget = plan + 1,
   beta = 0.25, resampling every 2 steps), interleaved task by task; with the prior calls
   per task (the value's rollouts included), wall and CPU time.

These are simulation numbers (a planner mixed with random actions, not an LLM).

Usage: python -m benchmarks.bench_planner_mix [--tasks 40]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time

import numpy as np

from amc.config import SMCConfig, ValueConfig
from amc.envs.textcraft.env import TextCraftOptions, TextCraftSuite
from amc.envs.textcraft.tasks import plan
from amc.priors.planner_mix import PlannerMixOptions, PlannerMixPrior, load_planner
from amc.smc.methods import parse_method
from amc.smc.sampler import run_task
from amc.types import History, Step
from amc.value.rollout import RolloutValue, RolloutValueOptions
from amc.value.simple import ZeroValue
from benchmarks._report import md_table, write_section

N, M, BETA, Q = 8, 8, 0.25, 0.4


async def calls_per_second(prior: PlannerMixPrior, tasks: list[str], seed: int) -> float:
    """Proposals per second along the prior's own episodes (at most 12 steps) on ``tasks``."""
    suite = prior.suite
    rng, spent, calls = np.random.default_rng(seed), 0.0, 0
    for task in tasks:
        env = suite.make()
        h = History(task, env.reset(task))
        while not h.done and h.t < 12:
            t0 = time.perf_counter()
            turn = await prior.propose(h, rng)
            spent += time.perf_counter() - t0
            calls += 1
            res = env.step(turn.action)
            h = h.extend(Step(turn.raw_text, turn.action, res.observation, res.reward,
                              res.done))
    return calls / spent


async def methods_throughput(suite: TextCraftSuite, tasks: list[str]) -> list[list[object]]:
    """Per method: tasks/min (wall, CPU), prior calls per task, oracle best-of-pool success."""
    prior = PlannerMixPrior(suite, load_planner("textcraft"), PlannerMixOptions(q=Q))
    values: dict[int, RolloutValue] = {}
    acc = {m: {"wall": 0.0, "cpu": 0.0, "calls": 0, "ok": 0.0} for m in ("bon", "smc")}
    for task in tasks:
        budget = len(plan(suite.book, suite.tasks.goal(task))) + 1
        smc = SMCConfig(n_particles=N, max_steps=budget, beta=BETA, resample="fixed",
                        resample_steps=tuple(range(2, budget, 2)))
        value = values.setdefault(budget, RolloutValue(
            suite, prior, BETA, RolloutValueOptions(n_rollouts=M, max_steps=budget)))
        for kind, v in (("bon", ZeroValue()), ("smc", value)):  # interleaved
            cfg = parse_method(f"{kind}@{N}", smc, ValueConfig()).smc
            w0, c0 = time.perf_counter(), time.process_time()
            res = await run_task(suite=suite, prior=prior, value=v, task_id=task, smc=cfg,
                                 seed=0, method=kind)
            a = acc[kind]
            a["wall"] += time.perf_counter() - w0
            a["cpu"] += time.process_time() - c0
            a["calls"] += res.usage.calls
            a["ok"] += res.metrics["oracle_best"]
    n = len(tasks)
    return [[f"{k}@{N}" + ("" if k == "bon" else f" + rollout value (M = {M})"),
             f"{60 * n / a['wall']:.0f}", f"{60 * n / a['cpu']:.0f}", f"{a['calls'] / n:.0f}",
             f"{a['ok'] / n:.2f}"] for k, a in acc.items()]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=40)
    args = ap.parse_args()
    suite = TextCraftSuite(TextCraftOptions(min_depth=2, max_depth=2))
    tasks = suite.task_ids("all")[: args.tasks]
    load0 = os.getloadavg()[0]
    rates = []
    for q in (0.0, 0.4, 1.0):
        prior = PlannerMixPrior(suite, load_planner("textcraft"), PlannerMixOptions(q=q))
        first = asyncio.run(calls_per_second(prior, tasks, seed=0))  # replays from reset
        later = asyncio.run(calls_per_second(prior, tasks, seed=1))  # the task's root cached
        rates.append([q, f"{first:,.0f}", f"{later:,.0f}", f"{1e6 / later:.0f}"])
    print(rates, flush=True)
    rows = asyncio.run(methods_throughput(suite, tasks))
    print(rows, flush=True)
    load = (load0 + os.getloadavg()[0]) / 2
    body = (
        "`python -m benchmarks.bench_planner_mix` — TextCraft depth-2 tasks (first "
        f"{len(tasks)} of the default split's `all`), 10 distractors. A simulation instrument: "
        "a planner mixed with random valid actions, not an LLM. The shared machine's load "
        f"average was about {load:.0f} during the run: absolute rates are far below an idle "
        "machine's; compare rows.\n\n"
        "Prior calls per second (`planner-mix`, each call replays one new action through the "
        "prefix cache; q = 0 also builds the menu). First episode per task: includes the "
        "task's reset and the first use of its memo tables; later episodes: the task's root "
        "is cached, as for every particle and rollout of a run after the first:\n\n"
        + md_table(["q", "calls / s, first episode", "calls / s, later episodes",
                    "µs / call, later"], rates)
        + f"\n\nMethods (q = {Q}, budget = plan + 1, beta = {BETA}, resampling every 2 steps; "
        "one seed, the two methods interleaved task by task; prior calls include the value's "
        "rollouts; CPU column: tasks per CPU-minute of this process):\n\n"
        + md_table(["method", "tasks / min (wall)", "tasks / CPU-min", "prior calls / task",
                    "oracle best-of-pool"], rows)
    )
    write_section("planner_mix", "Planner-mix prior and Monte-Carlo value (simulation)", body)


if __name__ == "__main__":
    main()
