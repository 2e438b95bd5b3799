"""Which prior change hurts a stale value head? Measured at the drift demo's toy scale.

The drift demo (:mod:`studies.drift.demo`) trains a head on prior A (planner-mix skill q_A), then
the prior changes to B (q_B). A change is a useful demo only when it *hurts* the stale head:
its AMC gain over Best-of-N (success of ``smc@N`` twisted by the head minus ``bon@N``, same
task and seed) falls from prior A to prior B, and a head retrained on B's rollouts recovers it.

Declared before running (the candidates and the rule; nothing below was tuned on the output):

- set ``skill`` (declared and run first), candidates in this order: (q_A, q_B) = (0.8, 0.4),
  (0.8, 0.2), (0.8, 0.6), (0.4, 0.8);
- set ``style`` (declared after ``skill`` ran and changed nothing measurable: every
  skill change keeps *which* states are good, so a stale head still ranks them right; a
  change of the prior's action *style* may not): q = 0.8 with ``menu_form`` false -> true
  (the planner's actions rewritten into the menu's own form, e.g. ``get 9 ice`` twice for
  ``get 18 ice``: a provider's model that phrases its actions differently), then the reverse;
- regimes, in this order: the demo's params then (:func:`demo_params`: TextCraft
  depth 2, ``smc.max_steps`` 6, 1-layer MiniLM head), then the same with a step budget of 5
  and of 4 (a tighter budget leaves Best-of-N room to fail, so AMC has room to gain: at 6
  steps a first run found every success 1.0 and every difference 0);
- per (regime, candidate), with rounds of window 1: round 0 on q_A trains the stale head, a
  round on q_B trains the retrained head (the pipeline's own stages, in a temp dir);
- evaluation at N = 4 on ``TASKS`` test tasks x ``SEEDS`` (seeds never used by a round or an
  evaluation), paired by (task, seed), averaged within task, t interval over tasks (95%) and
  the exact sign-flip p (:func:`amc.stats.paired_difference`):
  ``fall`` = stale gain on B - stale gain on A; ``recovery`` = retrained gain on B - stale gain
  on B (= success of smc+retrained - smc+stale on B; Best-of-N cancels);
- rule: the chosen change is the first (set, regime, candidate), sets outer, then regimes, in
  the orders above, whose ``fall`` interval lies below 0 and whose ``recovery`` interval lies
  above 0; none when no triple has both.

``python -m studies.drift.candidates SET [out.json]`` (default
``evidence/drift/candidates-<SET>.json``); every RNG is seeded (the pipeline's seeds and the
evaluation seeds below). The committed ``-skill`` file was written by this script's previous
revision (git 64b902b: the same measurement, candidates named by ``q_a``/``q_b``); the
``-style`` file by this one. Each cell takes 40 s on an idle 2-core CPU (2-3 min when shared).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from amc.config import RunConfig, ValueConfig
from amc.pipeline.params import load_params, model_name
from amc.pipeline.round import run_round
from amc.runner import run_methods
from amc.stats import paired_difference

Options = dict[str, Any]
SETS: dict[str, tuple[tuple[Options, Options], ...]] = {
    "skill": tuple(({"q": a}, {"q": b}) for a, b in ((0.8, 0.4), (0.8, 0.2), (0.8, 0.6),
                                                      (0.4, 0.8))),
    "style": (({"q": 0.8, "menu_form": False}, {"q": 0.8, "menu_form": True}),
              ({"q": 0.8, "menu_form": True}, {"q": 0.8, "menu_form": False})),
}
"""Candidate (prior A options, prior B options) of each set, in the declared order."""
TASKS = 24
SEEDS = (500, 501, 502)
N = 4
REGIMES = (6, 5, 4)
"""``smc.max_steps`` of each regime (the rest is the demo's params)."""
STAGES = ("collect", "dataset", "train")


def demo_params() -> dict[str, Any]:
    """The drift demo's params when this script ran (git 64b902b..49815a8: skill q, depth 2)."""
    return {
        "env": {"name": "textcraft", "options": {"reward": "dense", "max_depth": 2}},
        "prior": {"name": "planner-mix", "options": {"q": 0.4}},
        "smc": {"max_steps": 6, "beta": 1.0, "resample": "fixed", "resample_steps": [2],
                "success_threshold": 1.0},
        "collect": {"max_tasks": 8, "rollouts": 4, "seeds": [0]},
        "rounds": {"enabled": True, "window": 1},
        "train": {"epochs": 2, "max_length": 64, "num_layers": 1},
        "evaluate": {"methods": ["bon", "amc"], "n_grid": [2, 4], "seeds": [0, 1, 2],
                     "max_tasks": 8},
        "promote": {"calibration_states": 400},
        "drift": {"rollouts": 8, "seeds_per_check": 2, "calibration_states": 400},
        "report": {"calibration_states": 20},
    }


def train_round(params_path: Path, opts: Options) -> str:
    """One round (collect, dataset, train) on the prior with ``opts``; the head's model URI."""
    data = yaml.safe_load(params_path.read_text())
    data["prior"]["options"] = dict(opts)
    params_path.write_text(yaml.safe_dump(data, sort_keys=False))
    p = load_params(params_path)
    run_round(p, STAGES, record=False)
    from amc.pipeline import rounds

    rec = rounds.current_round(p)  # no promote stage: close the round by hand
    if rec is not None:
        rounds.close_round(p, int(rec["round"]))
    import mlflow

    versions = mlflow.MlflowClient().search_model_versions(f"name='{model_name(p)}'")
    return f"models:/{model_name(p)}/{max(int(v.version) for v in versions)}"


def successes(params_path: Path, opts: Options, heads: dict[str, str], out: Path, *,
              tasks: int = TASKS, seeds: tuple[int, ...] = SEEDS, n: int = N
              ) -> dict[str, dict[tuple[str, int], float]]:
    """Success per (task, seed) of bon@n and smc@n+<head> on the prior with ``opts``."""
    p = load_params(params_path)
    prior = p.prior.model_copy(update={"options": dict(opts)})
    specs = [f"bon@{n}", *(f"smc@{n}+{h}" for h in heads)]
    cfg = RunConfig(env=p.env, prior=prior, smc=p.smc, value=p.evaluate.zero_shot_value,
                    values={h: ValueConfig(name=p.evaluate.learned_value, options={"model": u})
                            for h, u in heads.items()},
                    methods=tuple(specs), split="test", max_tasks=tasks, seeds=seeds,
                    max_concurrent_tasks=p.evaluate.max_concurrent_tasks,
                    max_concurrent_particles=p.evaluate.max_concurrent_particles, out_dir=out)
    res = asyncio.run(run_methods(cfg, progress=False)).results
    table: dict[str, dict[tuple[str, int], float]] = {}
    for key, runs in res.items():
        spec = key.split("#")[0]
        for r in runs:
            table.setdefault(spec, {})[(r.task_id, r.seed)] = float(r.metrics["success"])
    return table


def gain(t: dict[str, dict[tuple[str, int], float]], head: str) -> dict[tuple[str, int], float]:
    """AMC - Best-of-N per (task, seed)."""
    smc, bon = t[f"smc@{N}+{head}"], t[f"bon@{N}"]
    return {k: smc[k] - bon[k] for k in smc if k in bon}


def summary(d: Any) -> dict[str, Any]:
    """The paired difference's mean, t interval, exact p, pairs and tasks."""
    return dict(d.to_dict())


def candidate(steps: int, qa: Options, qb: Options, root: Path) -> dict[str, Any]:
    """Train stale (A) and retrained (B) heads, evaluate, the paired fall and recovery."""
    os.chdir(root)
    params_path = root / "params.yaml"
    data = demo_params()
    data["smc"]["max_steps"] = steps
    params_path.write_text(yaml.safe_dump(data, sort_keys=False))
    stale = train_round(params_path, qa)
    fresh = train_round(params_path, qb)
    on_a = successes(params_path, qa, {"stale": stale}, root / "eval-a")
    on_b = successes(params_path, qb, {"stale": stale, "fresh": fresh}, root / "eval-b")
    ga, gb, gf = gain(on_a, "stale"), gain(on_b, "stale"), gain(on_b, "fresh")
    fall, rec = paired_difference(gb, ga), paired_difference(gf, gb)
    mean = {k: sum(v.values()) / len(v) for k, v in
            {"stale_gain_a": ga, "stale_gain_b": gb, "fresh_gain_b": gf}.items()}
    rates = {f"{side}:{spec}": sum(v.values()) / len(v)
             for side, t in (("A", on_a), ("B", on_b)) for spec, v in t.items()}
    return {"max_steps": steps, "prior_a": qa, "prior_b": qb, **mean, "success": rates,
            "fall": summary(fall), "recovery": summary(rec),
            "hurts": bool(fall.hi < 0 and rec.lo > 0), "models": [stale, fresh]}


def one(steps: int, qa: Options, qb: Options) -> dict[str, Any]:
    """One (regime, candidate) in a fresh temp dir (its own MLflow store)."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="drift-cand-") as tmp:
        row = candidate(steps, qa, qb, Path(tmp))
    return {**row, "seconds": round(time.monotonic() - started, 1)}


def main(argv: list[str]) -> None:
    """Every (regime, candidate) of a set, each in its own process (MLflow caches its store
    per process); ``--one STEPS A_JSON B_JSON`` runs one and prints its JSON line."""
    if argv[:1] == ["--one"]:
        row = one(int(argv[1]), json.loads(argv[2]), json.loads(argv[3]))
        print("RESULT " + json.dumps(row))
        return
    if not argv or argv[0] not in SETS:
        raise SystemExit(f"usage: drift_candidates.py {{{','.join(SETS)}}} [out.json]")
    name = argv[0]
    out = Path(argv[1] if len(argv) > 1 else f"evidence/drift/candidates-{name}.json").resolve()
    rows = []
    for steps in REGIMES:
        for qa, qb in SETS[name]:
            proc = subprocess.run([sys.executable, __file__, "--one", str(steps),
                                   json.dumps(qa), json.dumps(qb)],
                                  capture_output=True, text=True, check=False)
            lines = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
            if proc.returncode or not lines:
                raise RuntimeError(f"candidate {(steps, qa, qb)} failed:\n{proc.stderr[-3000:]}")
            rows.append(json.loads(lines[-1][len("RESULT "):]))
            print(json.dumps(rows[-1]), flush=True)
    chosen = next((r for r in rows if r["hurts"]), None)
    doc = {"declared": {"set": name, "regimes_max_steps": REGIMES, "candidates": SETS[name],
                        "tasks": TASKS, "seeds": SEEDS, "n": N,
                        "rule": "first (regime, candidate) with fall.hi < 0 and "
                                "recovery.lo > 0"},
           "candidates": rows,
           "chosen": None if chosen is None else {k: chosen[k] for k in
                                                  ("max_steps", "prior_a", "prior_b")}}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"chosen: {doc['chosen']}")


if __name__ == "__main__":
    main(sys.argv[1:])
