"""The multi-step cell's declared analysis (``protocol.json``): SMC with the rollout value
against Best-of-4, paired by task.

    python -m studies.sft_prior.multistep.analyse [--check]

Per task, each arm's success (any final particle succeeded) averaged over the declared seeds;
the mean per-task difference with its 95% t interval and sign-flip p (tasks counted once);
prior calls per run (proposals plus every value rollout's calls) as a ratio to Best-of-4's.
Beside it, not tested: the float32 DAgger search cell's Best-of-4 within H 8 on the same tasks
(its Best-of-8 rollouts split in groups of 4), a read of the bfloat16 serving's fidelity.
Writes ``result.json`` and ``result.md`` beside the kept records; ``--check`` recomputes and
compares instead.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from amc import stats
from amc.value.data import histories_from_record
from amc.value.room import success_step
from studies.sft_prior.cells import keep_or_check
from studies.sft_prior.multistep.run import EVIDENCE, protocol

FP32_CELL = EVIDENCE.parent / "dagger/search/depth2"


def read(folder: Path, pattern: str) -> list[dict[str, Any]]:
    """Complete records of the kept (gzipped) seed files matching ``pattern``."""
    out = []
    for f in sorted(folder.glob(pattern)):
        with gzip.open(f, "rt") as fh:
            out += [json.loads(line) for line in fh if line.endswith("\n")]
    return out


def arm(records: list[dict[str, Any]], method: str) -> dict[tuple[str, int], dict[str, float]]:
    """(task, seed) -> success and prior calls of one arm's runs."""
    return {(str(r["task_id"]), int(r["seed"])): {"success": float(r["metrics"]["success"]),
                                                  "calls": float(r["usage"]["calls"])}
            for r in records if r["method"] == method}


def fp32_best_of_4(tasks: list[str], horizon: int) -> float:
    """The float32 search cell's Best-of-4 within ``horizon``: its Best-of-8 rollouts in
    groups of 4, success when any succeeds by then; mean over groups, then over tasks."""
    per: dict[str, list[float]] = {}
    for rec in read(FP32_CELL, "bon@8__seed*.jsonl.gz"):
        if str(rec["task_id"]) not in tasks:
            continue
        hs = histories_from_record(rec)
        for g in range(0, len(hs), 4):
            ok = any((s := success_step(h, 1.0)) is not None and s <= horizon
                     for h in hs[g:g + 4])
            per.setdefault(str(rec["task_id"]), []).append(float(ok))
    return float(np.mean([np.mean(v) for v in per.values()])) if per else float("nan")


def blind_share(records: list[dict[str, Any]], method: str) -> dict[str, float]:
    """Per resampling step, the share of the arm's resampling events at which every particle
    had the same value (the weights then carry no information: for the rollout value, all M
    rollouts of every particle failed alike)."""
    per: dict[int, list[bool]] = {}
    for r in records:
        if r["method"] != method:
            continue
        for s in r["steps"]:
            vals = [v for v in (s.get("values") or []) if v is not None]
            if s.get("resampled") and vals:
                per.setdefault(int(s["t"]), []).append(max(vals) - min(vals) < 1e-9)
    return {str(t): float(np.mean(v)) for t, v in sorted(per.items())}


def paired(recs: list[dict[str, Any]], cell: dict[str, Any]) -> dict[str, Any]:
    """A declared cell's test: its two arms (SMC first) paired by (task, seed), seeds averaged
    within a task, the mean per-task difference with its t interval and sign-flip p, prior
    calls as a ratio to the second arm's, and the goal (judged only when every declared run
    is in)."""
    smc_name, bon_name = list(cell["arms"])
    smc, bon = arm(recs, smc_name), arm(recs, bon_name)
    pairs = sorted(set(smc) & set(bon))
    d = stats.paired_difference({k: smc[k]["success"] for k in pairs},
                                {k: bon[k]["success"] for k in pairs})
    ratio = float(np.mean([smc[k]["calls"] for k in pairs]) /
                  np.mean([bon[k]["calls"] for k in pairs])) if pairs else float("nan")
    declared = len(cell["tasks"]) * len(cell["seeds"])
    goal = bool(d.mean >= 0.15 and d.lo > 0 and d.p < 0.05 and ratio <= 8)

    def mean(a: dict[tuple[str, int], dict[str, float]]) -> float:
        return float(np.mean([a[k]["success"] for k in pairs])) if pairs else float("nan")

    return {
        "runs": len(pairs), "declared_runs": declared, "tasks": d.tasks,
        "success": {smc_name: mean(smc), bon_name: mean(bon)},
        "difference": d.to_dict(), "calls_ratio": ratio,
        "goal_met": goal if len(pairs) == declared else None,
    }


def analyse(kept: Path = EVIDENCE) -> dict[str, Any]:
    cell = protocol()["cell"]
    recs = read(kept, "*__seed*.jsonl.gz")
    return {
        **paired(recs, cell),
        "fp32_best_of_4_same_tasks": fp32_best_of_4(cell["tasks"], cell["horizon"]),
        "blind_resampling_share": blind_share(recs, next(iter(cell["arms"]))),
    }


def markdown(r: dict[str, Any]) -> str:
    p = protocol()
    smc_name, bon_name = list(p["cell"]["arms"])
    d = r["difference"]
    state = ("complete" if r["runs"] == r["declared_runs"]
             else f"incomplete: {r['runs']} of {r['declared_runs']} declared runs")
    verdict = {True: "**met**", False: "**not met**", None: "not judged (cell incomplete)"}
    return "\n".join([
        f"Declared in `studies/sft_prior/multistep/protocol.json` ({p['declared_utc']}); "
        f"{state}. DAgger checkpoint dagger1-100 served in bfloat16, TextCraft depth 2, "
        f"{r['tasks']} validation tasks, H {p['cell']['horizon']}, N {p['cell']['n']}.", "",
        f"| arm | success | prior calls / run vs {bon_name} |", "|---|---|---|",
        f"| {smc_name} (resampling after steps 2, 4, 6; beta 0.1; M 4) | "
        f"{r['success'][smc_name]:.3f} | {r['calls_ratio']:.2f}x |",
        f"| {bon_name} | {r['success'][bon_name]:.3f} | 1x |", "",
        f"Difference {smc_name} - {bon_name}, paired by task (seeds averaged within a task): "
        f"{d['mean']:+.3f} [{d['lo']:+.3f}, {d['hi']:+.3f}], sign-flip p {d['p']:.4f}, "
        f"{d['tasks']} tasks. Goal (>= +0.15, interval above 0, p < 0.05, calls <= 8x): "
        f"{verdict[r['goal_met']]}.", "",
        f"Beside it (exploratory, not tested): the float32 search cell's Best-of-4 within "
        f"H {p['cell']['horizon']} on the same tasks: {r['fp32_best_of_4_same_tasks']:.3f}. "
        "Share of resampling events at which every particle had the same value (no "
        "information in the weights), by step: " + ", ".join(
            f"step {t}: {v:.3f}" for t, v in r["blind_resampling_share"].items()) + ".",
        ""])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="recompute and compare, write nothing")
    a = ap.parse_args(argv)
    r = analyse()
    return keep_or_check(EVIDENCE, r, "" if a.check else markdown(r), a.check)


if __name__ == "__main__":
    sys.exit(main())
