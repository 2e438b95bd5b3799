"""The progress-value cell's declared analysis (``protocol.json``): SMC resampling after every
step with the ``textcraft-progress`` value against Best-of-4, paired by task.

    python -m studies.sft_prior.progress.analyse [--check]

Per task, each arm's success (any final particle succeeded) averaged over the declared seeds;
the mean per-task difference with its 95% t interval and sign-flip p (tasks counted once);
prior calls per run as a ratio to Best-of-4's. Beside it, not tested: whether this cell's
Best-of-4 runs repeat the multi-step cell's (same prior, tasks, seeds and H), and how well the
value ranks the Best-of-4 particles' states at each step (within-(task, seed, step) AUC against
success within H: the offline figure a learned value is compared on). Writes ``result.json``
and ``result.md`` beside the kept records; ``--check`` recomputes and compares instead.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

import numpy as np

from amc.envs.textcraft.progress import make_progress_value
from amc.types import History
from amc.value.data import histories_from_record
from amc.value.metrics import within_group_auc
from amc.value.room import success_step
from studies.sft_prior.cells import keep_or_check
from studies.sft_prior.multistep.analyse import paired, read
from studies.sft_prior.progress.run import EVIDENCE, protocol

MULTISTEP = EVIDENCE.parent / "multistep"


def same_as_multistep(records: list[dict[str, Any]], method: str) -> dict[str, Any]:
    """Share of this cell's runs of ``method`` whose particles took the same actions as the
    multi-step cell's run of the same (task, seed) (the engine's determinism across runs)."""
    def actions(recs: list[dict[str, Any]]) -> dict[tuple[str, int], list[list[str]]]:
        return {(str(r["task_id"]), int(r["seed"])):
                [[s.action for s in h.steps] for h in histories_from_record(r)]
                for r in recs if r["method"] == method}
    here, there = actions(records), actions(read(MULTISTEP, f"{method}__seed*.jsonl.gz"))
    both = sorted(set(here) & set(there))
    same = sum(here[k] == there[k] for k in both)
    return {"runs_compared": len(both), "identical": same,
            "share": same / len(both) if both else float("nan")}


def within_auc_by_step(records: list[dict[str, Any]], method: str, horizon: int,
                       env_options: dict[str, Any]) -> dict[str, float]:
    """Per step t < H: the value's within-(task, seed, t) AUC over the arm's particles still
    running after t steps, against success within H (steps where no group holds both a
    success and a failure are left out: the AUC is undefined there)."""
    value = make_progress_value(env_name="textcraft", env_options=env_options)
    rows: dict[int, tuple[list[float], list[bool], list[tuple[str, int]]]] = {}
    for r in records:
        if r["method"] != method:
            continue
        for h in histories_from_record(r):
            s = success_step(h, 1.0)
            for t in range(1, min(len(h.steps), horizon - 1) + 1):
                if s is not None and s <= t:
                    break
                v = asyncio.run(value.score([History(h.task_id, h.observation0,
                                                     h.steps[:t])]))[0]
                sc, lab, grp = rows.setdefault(t, ([], [], []))
                sc.append(v)
                lab.append(s is not None and s <= horizon)
                grp.append((str(r["task_id"]), int(r["seed"])))
    aucs = {str(t): within_group_auc(np.array(sc), np.array(lab), grp)
            for t, (sc, lab, grp) in sorted(rows.items())}
    return {t: a for t, a in aucs.items() if np.isfinite(a)}  # NaN: no group holds both


def analyse(kept: Path = EVIDENCE) -> dict[str, Any]:
    cell = protocol()["cell"]
    recs = read(kept, "*__seed*.jsonl.gz")
    bon_name = list(cell["arms"])[1]
    return {
        **paired(recs, cell),
        "best_of_4_repeats_multistep_cell": same_as_multistep(recs, bon_name),
        "value_within_auc_by_step": within_auc_by_step(recs, bon_name, cell["horizon"],
                                                        cell["env_options"]),
    }


def markdown(r: dict[str, Any]) -> str:
    p = protocol()
    smc_name, bon_name = list(p["cell"]["arms"])
    d, rep = r["difference"], r["best_of_4_repeats_multistep_cell"]
    state = ("complete" if r["runs"] == r["declared_runs"]
             else f"incomplete: {r['runs']} of {r['declared_runs']} declared runs")
    verdict = {True: "**met**", False: "**not met**", None: "not judged (cell incomplete)"}
    return "\n".join([
        f"Declared in `studies/sft_prior/progress/protocol.json` ({p['declared_utc']}); "
        f"{state}. DAgger checkpoint dagger1-100 served in bfloat16, TextCraft depth 2, "
        f"{r['tasks']} validation tasks, H {p['cell']['horizon']}, N {p['cell']['n']}.", "",
        f"| arm | success | prior calls / run vs {bon_name} |", "|---|---|---|",
        f"| {smc_name} (resampling after every step 1-7; beta 0.1; hand-made value) | "
        f"{r['success'][smc_name]:.3f} | {r['calls_ratio']:.2f}x |",
        f"| {bon_name} | {r['success'][bon_name]:.3f} | 1x |", "",
        f"Difference {smc_name} - {bon_name}, paired by task (seeds averaged within a task): "
        f"{d['mean']:+.3f} [{d['lo']:+.3f}, {d['hi']:+.3f}], sign-flip p {d['p']:.4f}, "
        f"{d['tasks']} tasks. Goal (>= +0.15, interval above 0, p < 0.05, calls <= 8x): "
        f"{verdict[r['goal_met']]}.", "",
        f"Beside it (exploratory, not tested): {rep['identical']} of {rep['runs_compared']} "
        f"{bon_name} runs took exactly the actions of the multi-step cell's run of the same "
        "(task, seed). The value's within-(task, seed, step) AUC over the Best-of-4 particles "
        "still running, against success within H, by step: " + ", ".join(
            f"step {t}: {v:.3f}" for t, v in r["value_within_auc_by_step"].items()) + ".",
        ""])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="recompute and compare, write nothing")
    a = ap.parse_args(argv)
    r = analyse()
    return keep_or_check(EVIDENCE, r, "" if a.check else markdown(r), a.check)


if __name__ == "__main__":
    sys.exit(main())
