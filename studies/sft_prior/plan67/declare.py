"""Declare the plan-67 cell (``protocol.json``), written once, before any of its runs.

Every earlier cell of the round-3 prior played the same 24 validation tasks (menu plans of 6-10
steps), and their exploratory reads put the room on the tasks whose menu-form plan takes 6 or
7 steps. Choosing that band on those tasks and measuring it there would measure the choice, so
this cell plays the band on **fresh** tasks: every depth-2/3 task whose menu-form plan (from an
empty inventory) takes 6-7 steps and that no demonstration and no LLM study used -- the plan
band's test reserve (train tasks kept out of SFT) and the default test split (never
demonstrated). A seeded permutation splits that pool: the first ``N_VALIDATION`` tasks are this
cell's, the rest are the pool its test-set rule draws from. The "why" numbers are computed here
from the kept evidence of the round-3 band and horizon-16 cells.

    python -m studies.sft_prior.plan67.declare
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from amc.envs.replay import build_suite
from amc.envs.textcraft.env import TextCraftOptions, TextCraftSuite
from amc.envs.textcraft.planner import menu_plan
from studies.sft_prior.multistep.analyse import arm, read

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
OUT = HERE / "protocol.json"
PLAN_STEPS = (6, 7)
N_VALIDATION = 15
POOL_SEED = 6167
SEEDS = list(range(8))
SEED_OPTIONS = (4, 8, 12, 16, 24)
MIN_TASKS = 10
EARLIER = {"round-3 band (H 12)": ("studies/sft_prior/band/protocol.json",
                                   "evidence/sft-prior/dagger3/band"),
           "horizon 16": ("studies/sft_prior/horizon/protocol.json",
                          "evidence/sft-prior/horizon")}


def plan_steps(task: str, env_options: dict[str, Any]) -> int:
    """Steps of the task's menu-form plan from an empty inventory."""
    return len(menu_plan(build_suite("textcraft", env_options), task))


def fresh_pool() -> list[str]:
    """Sorted ids of the band reserve's and the test split's 6-7-step tasks at depths 2-3;
    none may be a validation task of ``heldout.json`` (a leak is an error)."""
    held = json.loads((HERE.parent / "heldout.json").read_text())["tasks"]
    reserve = json.loads((HERE.parent / "horizon/protocol.json").read_text())["test_set_rule"][
        "reserve"]
    pool = set()
    for depth in (2, 3):
        suite = TextCraftSuite(TextCraftOptions(min_depth=depth, max_depth=depth,
                                                n_distractors=10))
        cand = suite.task_ids("test") + [t for t in reserve if t in suite.task_ids("train")]
        pool |= {t for t in cand if len(menu_plan(suite, t)) in PLAN_STEPS}
    seen = set(held["validation-depth2"]) | set(held["validation-depth3"])
    if seen & pool:
        raise SystemExit(f"validation tasks in the fresh pool: {sorted(seen & pool)}")
    return sorted(pool, key=int)


def earlier_by_plan() -> dict[str, dict[str, Any]]:
    """Per earlier cell, its 6-7-step tasks: count and each arm's success (seeds averaged)."""
    out = {}
    for name, (proto, kept) in EARLIER.items():
        p = json.loads((REPO / proto).read_text())
        cell = p["cell"]
        recs = read(REPO / kept, "*__seed*.jsonl.gz")
        tasks = [t for t in cell["tasks"] if plan_steps(t, cell["env_options"]) in PLAN_STEPS]
        row: dict[str, Any] = {"tasks": len(tasks)}
        for m in cell["arms"]:
            a = arm(recs, m)
            row[m] = float(np.mean([np.mean([r["success"] for (k, _), r in a.items() if k == t])
                                    for t in tasks]))
        out[name] = row
    return out


def declare() -> dict[str, Any]:
    pool = fresh_pool()
    order = np.random.default_rng(POOL_SEED).permutation(len(pool))
    val = sorted((pool[i] for i in order[:N_VALIDATION]), key=int)
    reserve = [pool[i] for i in order[N_VALIDATION:]]
    base = json.loads((HERE.parent / "horizon/protocol.json").read_text())
    earlier = earlier_by_plan()
    why_rows = "; ".join(
        f"{name}: {r['tasks']} tasks, SMC {r['smc@4+progress']:.3f}, Best-of-4 {r['bon@4']:.3f}"
        for name, r in earlier.items())
    cell = {**base["cell"], "tasks": val, "seeds": SEEDS, "horizon": 12,
            "task_rule": f"the first {N_VALIDATION} of a default_rng({POOL_SEED}) permutation of "
                         f"the fresh pool ({len(pool)} tasks: every depth-2/3 task of the "
                         "default test split and of the plan band's test reserve whose "
                         "menu-form plan from an empty inventory takes 6 or 7 steps; no "
                         "demonstration and no LLM study used any of them)"}
    cell["arms"]["smc@4+progress"]["resample_steps"] = list(range(1, 12))
    rule = {**base["test_set_rule"], "reserve": reserve,
            "tasks_from": f"the rest of the fresh pool ({len(reserve)} tasks), in a "
                          "default_rng(6168) permutation",
            "size": "variance components from this cell's (task, seed) differences: w = the "
                    "mean over tasks of the within-task variance of the per-seed differences "
                    f"(ddof 1), b = max(sd^2 - w/{len(SEEDS)}, 0) where sd is the sd of the "
                    f"{len(SEEDS)}-seed per-task means; for S in {SEED_OPTIONS} (first that "
                    "fits): sd_S = sqrt(b + w/S), n_S = max(amc.stats.tasks_for_power(D/2, sd_S, "
                    f"level 0.05, power 0.8), {MIN_TASKS}); the first S with n_S <= "
                    f"{len(reserve)} and an estimated CPU time <= 6 hours; the test set is the "
                    "first n_S tasks of the permutation. If none fits, no test set is declared "
                    "and the note says so.",
            "cpu": "CPU seconds per (task, seed) of both arms, measured from this cell's "
                   "process times (logs/plan67-seedS.log's /usr/bin/time lines), times n_S * S",
            "written": "python -m studies.sft_prior.plan67.declare_test writes "
                       "studies/sft_prior/plan67/test.json once, committed before any test run"}
    rule["when"] = rule["when"].replace("H 16", "H 12").replace("1-15", "1-11").replace(
        "plan-band tasks", "6-7-step plans")
    return {
        "name": "sft-prior-plan67-fresh", "issue": 61,
        "question": "With the round-3 prior (bfloat16) on fresh tasks whose menu-form plan takes "
                    "6-7 steps, H 12, N 4: does SMC resampling after every step with the "
                    "textcraft-progress value gain >= +0.15 success over Best-of-4 within 8x "
                    "its prior calls?",
        "why": "Exploratory reads of the kept cells on the band's 24 validation tasks (computed "
               f"by studies/sft_prior/plan67/declare.py), on their 6-7-step plans: {why_rows}. "
               "The 8-10-step plans stayed near 0 for both arms even at H 16, so the room lives "
               "on 6-7-step plans; but that band was chosen by looking at those tasks, so it is "
               "measured here on tasks no earlier cell played. Eight seeds per task, because "
               "the earlier cells' variance components put almost all of a task's variance in "
               "seed noise. This cell joins issue 61's family of declared cells on the "
               "round-3 prior, which the note counts.",
        "prior": base["prior"], "cell": cell, "analysis": base["analysis"].replace(
            "four seeds", "eight seeds").replace("24 tasks", f"{N_VALIDATION} tasks"),
        "goal": base["goal"], "test_set_rule": rule,
        "candidates_and_rule": "one declared cell; reported whatever it says",
        "commit_before_runs": True,
        "declared_utc": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def main() -> int:
    if OUT.exists():
        print(f"error: {OUT.name}: already declared; a declaration is written once",
              file=sys.stderr)
        return 2
    OUT.write_text(json.dumps(declare(), indent=1) + "\n")
    print(f"declared {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
