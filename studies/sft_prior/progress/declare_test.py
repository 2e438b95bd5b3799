"""Declare the test set of the progress-value regime (issue 61, item 4) by the rule
``protocol.json`` declared before the cell ran (``test_set_rule``), before any test run.

    python -m studies.sft_prior.progress.declare_test

Only if the cell met its goal: the room D is the cell's measured difference; the size is the
two-sided t test's task count for 80% power at D / 2 with the cell's own per-task differences
(2 seeds per task, as the test will run), at least 20 tasks; the tasks are the first n of the
depth-2 test reserve (``heldout.json``) in a ``default_rng(6120)`` permutation. Its CPU time is
estimated from the cell's measured wall seconds per particle-step (each arm's final progress
line in ``logs/progress-seedS.log``, over the prior calls its records count) beside item 2's
benchmark figure. Writes ``test.json`` once (a second call refuses) and prints its summary.
"""

from __future__ import annotations

import json
import re
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from amc import stats
from studies.llm_regime.testset import power_calculation
from studies.sft_prior.multistep.analyse import arm, read
from studies.sft_prior.progress.run import EVIDENCE, HERE, REPO, protocol

OUT = HERE / "test.json"
HELDOUT = HERE.parent / "heldout.json"
SEED, MIN_TASKS, SEEDS_PER_TASK, CPU_LIMIT_H = 6120, 20, 2, 6.0
BENCH_S_PER_PARTICLE_STEP = 0.285  # docs/benchmarks.md, particle-step-2-thread-adapter-bf16, N 4
_DONE = re.compile(r"\] (\S+) s(\d+): (\d+)/(\d+) tasks, (\d+) s")


def per_task_differences(records: list[dict[str, Any]], smc: str, bon: str) -> list[float]:
    """Per task: mean over its seeds of (SMC success - Best-of-N success)."""
    a, b = arm(records, smc), arm(records, bon)
    by: dict[str, list[float]] = {}
    for k in sorted(set(a) & set(b)):
        by.setdefault(k[0], []).append(a[k]["success"] - b[k]["success"])
    return [float(np.mean(v)) for _, v in sorted(by.items())]


def measured_s_per_particle_step(records: list[dict[str, Any]], logs: Path,
                                 pattern: str = "progress-seed*.log") -> float:
    """Wall seconds of every finished arm (its last progress line in the ``pattern`` logs)
    over the prior calls its records count (one call per particle-step)."""
    wall = 0.0
    for f in sorted(logs.glob(pattern)):
        last: dict[tuple[str, str], float] = {}
        for m in _DONE.finditer(f.read_text()):
            if m.group(3) == m.group(4):
                last[(m.group(1), m.group(2))] = float(m.group(5))
        wall += sum(last.values())
    return wall / sum(float(r["usage"]["calls"]) for r in records)


def declare_cell(p: dict[str, Any], evidence: Path, out: Path, reserve: list[str], seed: int,
                 logs: Path, pattern: str) -> dict[str, Any]:
    """The test-set declaration of a cell (protocol ``p``, kept records in ``evidence``) by
    the rule above; exits when ``out`` exists, the goal was not met or the reserve is short."""
    if out.exists():
        raise SystemExit(f"{out.name} is already declared; it is written once")
    result = json.loads((evidence / "result.json").read_text())
    if result["goal_met"] is not True:
        raise SystemExit("the cell did not meet its goal: no test set is declared (rule)")
    cell = p["cell"]
    smc, bon = list(cell["arms"])
    recs = read(evidence, "*__seed*.jsonl.gz")
    diffs = per_task_differences(recs, smc, bon)
    room = float(np.mean(diffs))
    n = max(stats.tasks_for_power(room / 2, float(np.std(diffs, ddof=1))), MIN_TASKS)
    if n > len(reserve):
        raise SystemExit(f"{n} tasks needed, the reserve holds {len(reserve)}: no test set")
    tasks = [reserve[i] for i in np.random.default_rng(seed).permutation(len(reserve))[:n]]
    s_step = measured_s_per_particle_step(recs, logs, pattern)
    steps = n * SEEDS_PER_TASK * len(cell["arms"]) * cell["n"] * cell["horizon"]
    return {
        "name": f"{p['name']}-testset", "issue": 61, "item": 4,
        "regime": {"prior": p["prior"]["options"], "env_options": cell["env_options"],
                   "horizon": cell["horizon"], "n": cell["n"],
                   "resample_steps": cell["arms"][smc]["resample_steps"],
                   "beta": cell["arms"][smc]["beta"]},
        "room": room, "effect_half_room": room / 2,
        "power": power_calculation(diffs, effect=room / 2, n_plan=n),
        "seeds": list(range(SEEDS_PER_TASK)), "tasks": tasks, "task_rule":
            f"the first {n} of the declared reserve in default_rng({seed}) order",
        "cpu": {"measured_s_per_particle_step": s_step,
                "benchmark_s_per_particle_step": BENCH_S_PER_PARTICLE_STEP,
                "particle_steps_at_most": steps, "hours_measured": steps * s_step / 3600,
                "hours_benchmark": steps * BENCH_S_PER_PARTICLE_STEP / 3600,
                "limit_h": CPU_LIMIT_H, "fits": steps * s_step / 3600 <= CPU_LIMIT_H},
        "declared_utc": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "rule": p["test_set_rule"],
    }


def declare(logs: Path = REPO / "logs") -> dict[str, Any]:
    """This cell's declaration: the depth-2 test reserve, default_rng(6120)."""
    reserve = json.loads(HELDOUT.read_text())["tasks"]["test-reserve-depth2"]
    return declare_cell(protocol(), EVIDENCE, OUT, reserve, SEED, logs, "progress-seed*.log")


def markdown(d: dict[str, Any]) -> str:
    """The declaration in words (``test.md``, beside ``test.json``)."""
    pw, cpu, r = d["power"], d["cpu"], d["regime"]
    return "\n".join([
        f"Declared {d['declared_utc']} by the rule committed with the cell, before any test run. "
        f"Regime: DAgger checkpoint dagger1-100 in {r['prior']['dtype']}, TextCraft, "
        f"depths {r['env_options']['min_depth']}-{r['env_options']['max_depth']}, "
        f"H {r['horizon']}, N {r['n']}, resampling after steps "
        f"{', '.join(map(str, r['resample_steps']))}, beta {r['beta']}.", "",
        "| room (validation) | half the room | per-task sd (pilot) | tasks for 80% (t) | "
        "tasks declared | seeds per task | t power at plan | sign-flip power (simulated) | "
        "CPU h (measured rate) | CPU h (benchmark rate) | fits 6 h |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        f"| {d['room']:+.3f} | {d['effect_half_room']:+.3f} | {pw['pilot_sd']:.3f} | "
        f"{pw['tasks_needed_t']} | {len(d['tasks'])} | {len(d['seeds'])} | "
        f"{pw['t_power_at_plan']:.2f} | {pw['simulated']['sign_flip_power']:.2f} | "
        f"{cpu['hours_measured']:.2f} | {cpu['hours_benchmark']:.2f} | "
        f"{'yes' if cpu['fits'] else 'no'} |", "",
        f"Tasks ({d['task_rule']}): {', '.join(d['tasks'])}.", ""])


def main() -> int:
    d = declare()
    OUT.write_text(json.dumps(d, indent=1) + "\n")
    OUT.with_suffix(".md").write_text(markdown(d))
    print(markdown(d))
    return 0


if __name__ == "__main__":
    sys.exit(main())
