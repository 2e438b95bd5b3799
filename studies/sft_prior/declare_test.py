"""Declare the test set of the fine-tuned prior's chosen regime (issue 61, item 4), before any
test run.

The test compares AMC with Best-of-N on the same (task, seed) pairs; its size comes from the
chosen cell's own Best-of-8 rollouts, without any AMC run:

- **noise of two independent arms**: per task, the difference of two disjoint Best-of-N groups'
  observed outcomes within the horizon. Under the null both arms have the same chance on every
  task, so a pair's difference has mean 0 and the per-task mean over k seeds has sd
  ``sigma_pair / sqrt(k)``: seeds per task average all of it away;
- **common random numbers** (a design choice the engine makes: a proposal's generator is keyed by
  (run seed, task, step, slot), so AMC and Best-of-N with the same seed share every step before
  the first resampling): measured as the ratio of the sd of the perfect resampler's per-group
  room against Best-of-N *of the same group* to that against *another group* of the task;
- **seeds per task** k in ``SEED_OPTIONS``: the fewest tasks whose two-sided t test detects half
  the room with 80% power at sd ``sigma_pair / sqrt(k)``, at least ``MIN_TASKS``;
- **CPU time**: the methods' prior calls per (task, seed) (Best-of-N's measured in the search at
  the horizon; AMC's the same; the zero-shot value adds one scoring call per particle at the
  regime's one resampling step t, as the room assumes; the rollout ceiling ``M_ROLLOUTS``
  continuations per particle and remaining step)
  times the measured CPU seconds per particle-step of the benchmark
  (docs/benchmarks.md, ``particle-step-2-thread-adapter``, ``hf+kv compact`` at N).

Rule: among the options that fit the test reserve and ``CPU_LIMIT_H``, the fewest runs
(tasks x seeds), ties fewer seeds; sized on the independent-arm noise, or (only if none fits)
on that noise scaled by the measured CRN ratio, which the declaration then says. Tasks are drawn
with ``SEED`` from ``heldout.json``'s test reserve at the chosen depth (never demonstrated, no
LLM study ran them). Writes ``declared/test.json`` once, and ``evidence/sft-prior/test-sizing.md``
(or only the sizing when nothing fits).

    python -m studies.sft_prior.declare_test [--dagger]   # --dagger: the DAgger round's choice
"""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from amc import stats
from amc.results import dumps
from amc.value.room import success_step, task_room
from studies.llm_regime.regime_search.analyse import (
    M_ROLLOUTS,
    calls,
    read_records,
    rollouts,
    task_histories,
)
from studies.llm_regime.testset import power_calculation
from studies.sft_prior.regime_search.run import EVIDENCE, REPO, step_dir

HERE = Path(__file__).parent
OUT = HERE / "declared" / "test.json"
SIZING_MD = REPO / "evidence/sft-prior/test-sizing.md"
BENCH = REPO / "docs/benchmarks.md"
SEED = 6104
"""The draw of the test tasks from the reserve."""
SEED_OPTIONS = (1, 2, 3, 4, 6)
MIN_TASKS = 10
CPU_LIMIT_H = 6.0
"""The goal: the test's CPU time on this machine at most this many hours."""


def pair_differences(by_task: dict[str, Any], n: int, horizon: int) -> dict[str, list[float]]:
    """Per task: observed(group 2j) - observed(group 2j + 1), disjoint Best-of-N groups."""
    out = {}
    for task, hs in by_task.items():
        won: dict[tuple[int, int], float] = {}
        for seed, i, h in hs:
            at = success_step(h, 1.0)
            g = (seed, i // n)
            won[g] = max(won.get(g, 0.0), float(at is not None and at <= horizon))
        keys = sorted(won)
        out[task] = [won[a] - won[b] for a, b in zip(keys[0::2], keys[1::2], strict=False)]
    return out


def crn_ratio(by_task: dict[str, Any], c: dict[str, Any]) -> float:
    """sd(perfect_g - model_g) / sd(perfect_g - model_g'), g' another group of the task."""
    same, other = [], []
    for hs in by_task.values():
        gs = task_room(rollouts(hs, c["n"]), n=c["n"], horizon=c["horizon"], step=c["step"],
                       beta=c["beta"])
        for i, g in enumerate(gs):
            same.append(g.perfect - g.best_of_n_model)
            other.append(g.perfect - gs[(i + 1) % len(gs)].best_of_n_model)
    s, o = float(np.std(same, ddof=1)), float(np.std(other, ddof=1))
    return s / o if o > 0 else math.nan


def cpu_per_particle_step(n: int, text: str | None = None) -> float:
    """CPU seconds per particle-step of ``hf+kv compact`` at N from the benchmark's table."""
    text = BENCH.read_text() if text is None else text
    m = re.search(r"<!-- bench:particle-step-2-thread-adapter -->(.*?)<!-- /bench", text, re.S)
    if m is None:
        raise ValueError("docs/benchmarks.md has no particle-step-2-thread-adapter section")
    rows = [[x.strip() for x in line.strip("|").split("|")] for line in m.group(1).splitlines()
            if line.startswith("|")]
    head = rows[0]
    for r in rows[2:]:
        if r[0] == str(n) and r[1] == "hf+kv compact":
            return float(r[head.index("CPU s / particle-step")])
    raise ValueError(f"no hf+kv compact row at N = {n} in the benchmark")


def calls_per_task_seed(bon_calls: float, c: dict[str, Any]) -> dict[str, float]:
    """Prior calls (particle-steps) of each declared method for one (task, seed)."""
    n, h, t = c["n"], c["horizon"], c["step"]
    return {f"bon@{n}": bon_calls, f"smc@{n}+challenger": bon_calls,
            f"smc@{n}+zero-shot": bon_calls + n,  # one scoring call per particle at step t
            f"smc@{n}+rollout": bon_calls + n * M_ROLLOUTS * (h - t)}


def options(sigma_pair: float, effect: float, pool: int, cpu_h_per_run: float,
            scale: float = 1.0) -> list[dict[str, Any]]:
    """Each seeds-per-task option: tasks for 80% power, runs, CPU hours, and whether it fits."""
    out = []
    for k in SEED_OPTIONS:
        sd = scale * sigma_pair / math.sqrt(k)
        tasks = max(MIN_TASKS, stats.tasks_for_power(effect, sd)) if sd > 0 else MIN_TASKS
        cpu = tasks * k * cpu_h_per_run
        out.append({"seeds": k, "sd_per_task": sd, "tasks": tasks, "runs": tasks * k,
                    "cpu_h": cpu, "t_power": stats.t_power(effect, sd, tasks),
                    "fits": tasks <= pool and cpu <= CPU_LIMIT_H})
    return out


def pick(opts: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The declared rule: the fewest runs among those that fit; ties fewer seeds."""
    return min((o for o in opts if o["fits"]), key=lambda o: (o["runs"], o["seeds"]),
               default=None)


def declaration(room: dict[str, Any], heldout: dict[str, Any],
                kept: Path = EVIDENCE, bench: str | None = None, cell: Path | None = None,
                adapter: str | None = None) -> dict[str, Any]:
    """The sizing (and, if an option fits, the test) of ``room``'s chosen regime, from the
    chosen cell's rollouts (``cell``, default ``kept/step-NNNNNN/depthD``) and ``adapter``
    (default the first run's kept checkpoint)."""
    c = room["chosen"]
    if c is None:
        raise SystemExit("no regime was chosen: nothing to declare (see room.md)")
    c = {**c, "checkpoint": c.get("checkpoint_label", c["checkpoint"])}
    if cell is None:
        cell = kept / step_dir(c["checkpoint"]) / f"depth{c['depth']}"
    by_task = task_histories(read_records(cell))
    diffs = pair_differences(by_task, c["n"], c["horizon"])
    flat = np.array([d for v in diffs.values() for d in v])
    sigma = float(np.sqrt(np.mean(flat ** 2)))  # the null's mean is 0: its second moment
    effect = c["room"] / 2
    bon_calls = float(np.mean([calls(hs, c["n"], c["horizon"]) for hs in by_task.values()]))
    per_run = calls_per_task_seed(bon_calls, c)
    cpu_s = cpu_per_particle_step(c["n"], bench)
    cpu_h_run = sum(per_run.values()) * cpu_s / 3600
    pool = heldout["tasks"][f"test-reserve-depth{c['depth']}"]
    ratio = crn_ratio(by_task, c)
    basis, opts = "independent arms", options(sigma, effect, len(pool), cpu_h_run)
    if pick(opts) is None and ratio < 1:
        basis, opts = "CRN-scaled", options(sigma, effect, len(pool), cpu_h_run, ratio)
    best = pick(opts)
    sizing = {"regime": {k: c[k] for k in ("checkpoint", "depth", "horizon", "n", "step",
                                           "beta")},
              "room_on_validation": {k: c[k] for k in ("room", "room_lo", "room_hi", "p")},
              "effect": effect, "sigma_pair": sigma, "pairs": int(flat.size),
              "crn_sd_ratio": ratio, "basis": basis, "options": opts, "chosen": best,
              "calls_per_task_seed": per_run, "cpu_s_per_particle_step": cpu_s,
              "reserve_tasks": len(pool)}
    if best is None:
        return {"declared": False, "sizing": sizing}
    tasks = np.random.default_rng(SEED).choice(sorted(pool, key=int), best["tasks"],
                                               replace=False)
    per_task = [float(np.mean(v)) * math.sqrt(len(v) / best["seeds"]) for v in diffs.values()]
    n = c["n"]
    return {"declared": True, "sizing": sizing, "test": {
        "name": "sft-prior-test", "issue": 61, "regime": sizing["regime"],
        "prior": {"name": "hf", "adapter": adapter or
                  f"sft/kept/textcraft/{step_dir(c['checkpoint'])}"},
        "tasks": sorted((str(t) for t in tasks), key=int), "task_seed": SEED,
        "task_pool": f"studies/sft_prior/heldout.json test-reserve-depth{c['depth']}",
        "seeds": list(range(best["seeds"])), "methods": list(per_run),
        "primary": {"a": f"smc@{n}+challenger", "b": f"bon@{n}", "metric": "success",
                    "statement": f"AMC@{n} (learned value) - Best-of-{n} on success, paired by "
                    "(task, seed) with common random numbers, seeds averaged within a task; "
                    "two-sided 95% t interval over tasks and the exact sign-flip p"},
        "power": {**power_calculation(per_task, effect=effect, n_plan=best["tasks"]),
                  "basis": basis},
        "cpu_hours_estimated": best["cpu_h"]}}


def markdown(d: dict[str, Any]) -> str:
    z = d["sizing"]
    r = z["regime"]
    out = [f"Chosen regime: checkpoint {r['checkpoint']}, depth {r['depth']}, H {r['horizon']}, "
           f"N {r['n']}, resampling after step {r['step']}, beta {r['beta']:g}; half its room "
           f"is {z['effect']:+.3f}. Noise of two independent Best-of-{r['n']} arms: sd "
           f"{z['sigma_pair']:.3f} per (task, seed) pair ({z['pairs']} pairs); common random "
           f"numbers: sd ratio {z['crn_sd_ratio']:.2f} (same group / another group). CPU "
           f"{z['cpu_s_per_particle_step']:.3f} s per particle-step (benchmark). Sized on: "
           f"{z['basis']}.", "",
           "| seeds per task | sd per task | tasks for 80% | runs | t power | CPU h | fits |",
           "|---|---|---|---|---|---|---|"]
    for o in z["options"]:
        out.append(f"| {o['seeds']} | {o['sd_per_task']:.3f} | {o['tasks']} | {o['runs']} | "
                   f"{o['t_power']:.2f} | {o['cpu_h']:.2f} | {'yes' if o['fits'] else 'no'} |")
    if d["declared"]:
        t = d["test"]
        out += ["", f"Declared (studies/sft_prior/declared/test.json): {len(t['tasks'])} tasks "
                f"x {len(t['seeds'])} seeds from the depth-{r['depth']} test reserve, t power "
                f"{t['power']['t_power_at_plan']:.2f} (simulated sign-flip "
                f"{t['power']['simulated']['sign_flip_power']:.2f}), about "
                f"{t['cpu_hours_estimated']:.1f} CPU hours."]
    else:
        out += ["", f"No option fits the {z['reserve_tasks']} reserve tasks and "
                f"{CPU_LIMIT_H:g} CPU hours: no test set is declared."]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description="Size (and declare, if one fits) the test set.")
    ap.add_argument("--dagger", action="store_true",
                    help="the DAgger round's chosen regime (studies/sft_prior/dagger)")
    a = ap.parse_args(argv)
    if OUT.exists():
        raise SystemExit(f"{OUT} exists: a declaration is written once")
    heldout = json.loads((HERE / "heldout.json").read_text())
    sizing_md = SIZING_MD
    if a.dagger:
        from studies.sft_prior.dagger import analyse as dagger

        room = json.loads((dagger.OUT / "room.json").read_text())
        label = str(room["chosen"]["checkpoint_label"]) if room["chosen"] else ""
        cell = dict((str(k), f) for k, f in dagger.cells(room["chosen"]["depth"]))[label] \
            if room["chosen"] else None
        adapter = f"sft/kept/textcraft-dagger1/{step_dir(int(label.rsplit('-', 1)[1]))}" \
            if label.startswith("dagger1-") else None
        d = declaration(room, heldout, cell=cell, adapter=adapter)
        sizing_md = dagger.OUT / "test-sizing.md"
    else:
        d = declaration(json.loads((EVIDENCE / "room.json").read_text()), heldout)
    sizing_md.write_text(markdown(d))
    if d["declared"]:
        OUT.parent.mkdir(parents=True, exist_ok=True)
        when = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")  # the clock, never typed
        OUT.write_text(dumps(d["test"] | {"declared_utc": when, "sizing": d["sizing"]},
                             indent=1) + "\n")
    print(markdown(d), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
