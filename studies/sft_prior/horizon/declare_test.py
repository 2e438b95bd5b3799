"""Declare the horizon-16 regime's test set by the rule its ``protocol.json`` declared before
the cell ran, before any test run; written once.

The rule buys power with seeds per task. A task's paired difference averaged over S seeds has
variance ``b + w / S``: ``w`` the variance of one seed's difference around its task's mean
(the seed noise: which particles the prior happened to sample), ``b`` the variance of the
tasks' true differences (no number of seeds removes it). From the cell's four seeds,
``w`` is the mean within-task variance (ddof 1) and ``b = max(sd4^2 - w/4, 0)``, sd4 the sd
of the four-seed task means. For S = 4, 8, 12, 16 the tasks needed at half the room
(two-sided t, level 0.05, power 0.8; at least 20) are computed, and the first S whose tasks
fit the band's 26-task reserve and whose CPU estimate (this cell's measured CPU seconds per
(task, seed) of both arms, from ``/usr/bin/time`` in ``logs/horizon-seedS.log``) fits 6 hours
is declared.

    python -m studies.sft_prior.horizon.declare_test
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
from studies.sft_prior.horizon.run import EVIDENCE, HERE, REPO, protocol
from studies.sft_prior.multistep.analyse import arm, read

OUT = HERE / "test.json"
SEED_OPTIONS = (4, 8, 12, 16)
MIN_TASKS = 20
CPU_LIMIT_H = 6.0
PERMUTATION_SEED = 6161
_TIME = re.compile(r"(User|System) time \(seconds\): ([0-9.]+)")


def variance_components(by_task: dict[str, list[float]]) -> tuple[float, float]:
    """(w, b) from per-task lists of per-seed differences, every task with the same number
    of seeds (>= 2): ``w`` the mean within-task variance of one seed's difference, ``b`` the
    between-task variance left when the seed noise of the task means is taken out (>= 0)."""
    sizes = {len(v) for v in by_task.values()}
    if len(sizes) != 1 or min(sizes) < 2 or len(by_task) < 2:
        raise ValueError(f"need >= 2 tasks with one common number (>= 2) of seeds; got {sizes}")
    (k,) = sizes
    x = np.array([by_task[t] for t in sorted(by_task)], dtype=np.float64)  # (tasks, seeds)
    w = float(x.var(axis=1, ddof=1).mean())
    return w, max(float(x.mean(axis=1).var(ddof=1)) - w / k, 0.0)


def per_seed_differences(recs: list[dict[str, Any]], smc: str, bon: str
                         ) -> dict[str, list[float]]:
    """task -> the (SMC - Best-of-N) success difference of each seed both arms played."""
    a, b = arm(recs, smc), arm(recs, bon)
    out: dict[str, list[float]] = {}
    for k in sorted(set(a) & set(b)):
        out.setdefault(k[0], []).append(a[k]["success"] - b[k]["success"])
    return out


def sizing(recs: list[dict[str, Any]], smc: str, bon: str, effect: float) -> dict[str, Any]:
    """The rule's sizing at ``effect``: variance components and, per S, the tasks needed."""
    w, b = variance_components(per_seed_differences(recs, smc, bon))
    need = {str(s): max(stats.tasks_for_power(effect, float(np.sqrt(b + w / s))), MIN_TASKS)
            for s in SEED_OPTIONS}
    return {"effect": effect, "within_var": w, "between_var": b, "tasks_needed": need}


def cpu_s_per_task_seed(logs: Path, runs_per_log: int) -> float:
    """CPU seconds (user + system, ``/usr/bin/time -v``) of every seed log over the (task,
    seed) runs they played; a log without its time lines (a killed process) is an error."""
    total, n = 0.0, 0
    for f in sorted(logs.glob("horizon-seed*.log")):
        found = dict(_TIME.findall(f.read_text()))
        if set(found) != {"User", "System"}:
            raise SystemExit(f"{f.name} has no /usr/bin/time lines: its CPU is unknown")
        total += float(found["User"]) + float(found["System"])
        n += runs_per_log
    if n == 0:
        raise SystemExit("no horizon-seed*.log: the cell's CPU is unknown")
    return total / n


def declare(logs: Path = REPO / "logs") -> dict[str, Any]:
    if OUT.exists():
        raise SystemExit(f"{OUT.name} is already declared; it is written once")
    p = protocol()
    result = json.loads((EVIDENCE / "result.json").read_text())
    if result["goal_met"] is not True:
        raise SystemExit("the cell did not meet its goal: no test set is declared (rule)")
    cell = p["cell"]
    smc, bon = list(cell["arms"])
    room = float(result["difference"]["mean"])
    size = sizing(read(EVIDENCE, "*__seed*.jsonl.gz"), smc, bon, room / 2)
    cpu = cpu_s_per_task_seed(logs, len(cell["tasks"]))
    reserve = p["test_set_rule"]["reserve"]
    for s in SEED_OPTIONS:
        n = size["tasks_needed"][str(s)]
        hours = n * s * cpu / 3600
        if n <= len(reserve) and hours <= CPU_LIMIT_H:
            break
    else:
        raise SystemExit(f"no seeds-per-task option fits the reserve and 6 h: {size}")
    order = np.random.default_rng(PERMUTATION_SEED).permutation(len(reserve))
    return {
        "name": f"{p['name']}-testset", "issue": 61, "item": 4, "room": room,
        "regime": {"prior": p["prior"]["options"], "env_options": cell["env_options"],
                   "horizon": cell["horizon"], "n": cell["n"], "arms": cell["arms"]},
        "sizing": size, "seeds": list(range(s)), "tasks": [reserve[i] for i in order[:n]],
        "cpu": {"s_per_task_seed": cpu, "hours": hours, "limit_h": CPU_LIMIT_H},
        "declared_utc": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "rule": p["test_set_rule"],
    }


def main() -> int:
    d = declare()
    OUT.write_text(json.dumps(d, indent=1) + "\n")
    print(json.dumps({k: d[k] for k in ("room", "sizing", "seeds", "tasks", "cpu")}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
