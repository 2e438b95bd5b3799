"""Driver overhead per particle-step on the synthetic tree MDP, N in {15, 64, 256}.

The synthetic prior and environment cost microseconds, so the time per particle-step is the
driver's own overhead: asyncio scheduling of proposals, weight updates, ESS, resampling,
forking and bookkeeping. Best-of-N (no value calls, no resampling) and SMC (value + resampling
after every step) are measured side by side in one run, interleaved, best of ``--repeats``.

Usage: python -m benchmarks.bench_driver [--repeats 5]
"""

from __future__ import annotations

import argparse
import asyncio
import time

from amc.config import SMCConfig
from amc.registry import ENVIRONMENTS, PRIORS, VALUES
from amc.smc.sampler import run_task
from benchmarks._report import md_table, write_section

DEPTH = 8


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    opts = {"depth": DEPTH, "branching": 3, "p_terminal": 0.0}
    suite = ENVIRONMENTS.build("synthetic", opts)
    ctx = {"env_name": "synthetic", "env_options": suite.options, "beta": 1.0}
    prior = PRIORS.build("synthetic", None, **ctx)
    exact = VALUES.build("exact", None, **ctx)
    configs = {
        "Best-of-N (no value, no resampling)": dict(resample="never"),
        "SMC (value + resampling every step)": dict(
            resample="fixed", resample_steps=tuple(range(1, DEPTH))),
    }
    asyncio.run(exact.score([]))
    rows = []
    for n in (15, 64, 256):
        best: dict[str, float] = {k: float("inf") for k in configs}
        for rep in range(args.repeats):
            for name, kw in configs.items():  # interleaved: same noise for both
                smc = SMCConfig(n_particles=n, max_steps=DEPTH, **kw)
                t0 = time.perf_counter()
                res = asyncio.run(run_task(suite=suite, prior=prior, value=exact, task_id="1",
                                           smc=smc, seed=rep))
                dt = time.perf_counter() - t0
                particle_steps = sum(len(t.steps) for t in res.population)
                best[name] = min(best[name], dt / particle_steps * 1e6)
        bon, smc_ = best.values()
        rows.append([n, f"{bon:.1f}", f"{smc_:.1f}", f"{smc_ / bon:.2f}"])
        print(rows[-1], flush=True)
    body = (
        f"`python -m benchmarks.bench_driver` — synthetic tree (depth {DEPTH}, branching 3), "
        f"one task, best of {args.repeats} interleaved repeats. Time per particle-step "
        "includes the synthetic prior/env (microseconds) and, for SMC, the exact value "
        "lookup, ESS, resampling and forking at every step.\n\n"
        + md_table(["N", "BoN µs / particle-step", "SMC µs / particle-step", "SMC / BoN"],
                   rows)
    )
    write_section("driver", "SIR driver overhead (issue: engine)", body)


if __name__ == "__main__":
    main()
