"""Sizing a declared test set with seeds per task, from a validation cell's per-seed differences.

A task's paired difference averaged over S seeds has variance ``b + w / S``: ``w`` the variance
of one seed's difference around its task's mean (the seed noise: which particles the prior
happened to sample), ``b`` the variance of the tasks' true differences (no number of seeds
removes it). From a cell with k seeds per task, ``w`` is the mean within-task variance (ddof 1)
and ``b = max(sd_k^2 - w/k, 0)``, sd_k the sd of the k-seed task means. For each S the tasks
needed at half the room (two-sided t, level 0.05, power 0.8, at least a floor) follow; the
first S whose tasks fit the cell's reserve and whose CPU estimate (the cell's measured CPU
seconds per (task, seed) of both arms, from ``/usr/bin/time -v`` in its seed logs) fits the
limit is declared. The cells' ``declare_test`` modules call :func:`declare` with their rule's
constants.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from amc import stats
from studies.sft_prior.multistep.analyse import arm, read

_TIME = re.compile(r"(User|System) time \(seconds\): ([0-9.]+)")


@dataclass(frozen=True)
class Rule:
    """A cell's declared test-set sizing rule."""

    seed_options: tuple[int, ...]
    """Seeds per task to try, in order; the first that fits is declared."""
    min_tasks: int
    """The fewest tasks a test set may have, whatever the power computation says."""
    log_glob: str
    """The cell's seed logs (``/usr/bin/time -v`` output) under the logs folder."""
    permutation_seed: int
    """``default_rng`` seed of the reserve's permutation; the test set is its first n tasks."""
    cpu_limit_h: float = 6.0
    """The most CPU hours the test set may cost on this machine."""


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


def sizing(recs: list[dict[str, Any]], smc: str, bon: str, effect: float,
           seed_options: tuple[int, ...], min_tasks: int) -> dict[str, Any]:
    """The sizing at ``effect``: variance components and, per S, the tasks needed."""
    w, b = variance_components(per_seed_differences(recs, smc, bon))
    need = {str(s): max(stats.tasks_for_power(effect, float(np.sqrt(b + w / s))), min_tasks)
            for s in seed_options}
    return {"effect": effect, "within_var": w, "between_var": b, "tasks_needed": need}


def cpu_s_per_task_seed(logs: Path, log_glob: str, runs_per_log: int) -> float:
    """CPU seconds (user + system, ``/usr/bin/time -v``) of every seed log over the (task,
    seed) runs they played; a log without its time lines (a killed process) is an error."""
    total, n = 0.0, 0
    for f in sorted(logs.glob(log_glob)):
        found = dict(_TIME.findall(f.read_text()))
        if set(found) != {"User", "System"}:
            raise SystemExit(f"{f.name} has no /usr/bin/time lines: its CPU is unknown")
        total += float(found["User"]) + float(found["System"])
        n += runs_per_log
    if n == 0:
        raise SystemExit(f"no {log_glob}: the cell's CPU is unknown")
    return total / n


def declare(p: dict[str, Any], result: dict[str, Any], recs: list[dict[str, Any]],
            logs: Path, rule: Rule) -> dict[str, Any]:
    """The test set that ``rule`` declares for the cell protocol ``p`` whose analysis gave
    ``result`` on its records ``recs``; SystemExit if the goal was not met or nothing fits."""
    if result["goal_met"] is not True:
        raise SystemExit("the cell did not meet its goal: no test set is declared (rule)")
    cell = p["cell"]
    smc, bon = list(cell["arms"])
    room = float(result["difference"]["mean"])
    size = sizing(recs, smc, bon, room / 2, rule.seed_options, rule.min_tasks)
    cpu = cpu_s_per_task_seed(logs, rule.log_glob, len(cell["tasks"]))
    reserve = p["test_set_rule"]["reserve"]
    for s in rule.seed_options:
        n = size["tasks_needed"][str(s)]
        hours = n * s * cpu / 3600
        if n <= len(reserve) and hours <= rule.cpu_limit_h:
            break
    else:
        raise SystemExit(f"no seeds-per-task option fits the reserve and "
                         f"{rule.cpu_limit_h:g} h: {size}")
    order = np.random.default_rng(rule.permutation_seed).permutation(len(reserve))
    return {
        "name": f"{p['name']}-testset", "issue": 61, "item": 4, "room": room,
        "regime": {"prior": p["prior"]["options"], "env_options": cell["env_options"],
                   "horizon": cell["horizon"], "n": cell["n"], "arms": cell["arms"]},
        "sizing": size, "seeds": list(range(s)), "tasks": [reserve[i] for i in order[:n]],
        "cpu": {"s_per_task_seed": cpu, "hours": hours, "limit_h": rule.cpu_limit_h},
        "declared_utc": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "rule": p["test_set_rule"],
    }


def markdown(s: dict[str, Any]) -> str:
    """An exploratory sizing ``s`` as one paragraph."""
    return "\n".join([
        "", f"Beside it (exploratory): the test-set rule's sizing at half this difference "
        f"({s['effect']:+.3f}): within-task variance of a seed's difference "
        f"{s['within_var']:.4f}, between-task variance {s['between_var']:.4f}; tasks needed "
        "for 80% power with S seeds per task: " + ", ".join(
            f"S {k}: {v}" for k, v in s["tasks_needed"].items()) + ".", ""])


def declare_main(here: Path, evidence: Path, p: dict[str, Any], rule: Rule, logs: Path) -> int:
    """A cell's ``declare_test`` command: write ``here/test.json`` once by ``rule`` from the
    cell's kept ``evidence`` (result.json and records) and ``logs``; refuses a second time."""
    out = here / "test.json"
    if out.exists():
        raise SystemExit(f"{out.name} is already declared; it is written once")
    d = declare(p, json.loads((evidence / "result.json").read_text()),
                read(evidence, "*__seed*.jsonl.gz"), logs, rule)
    out.write_text(json.dumps(d, indent=1) + "\n")
    print(json.dumps({k: d[k] for k in ("room", "sizing", "seeds", "tasks", "cpu")}, indent=1))
    return 0
