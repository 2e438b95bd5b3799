"""Which prior change hurts a stale value head? Measured at the drift demo's toy scale.

The drift demo (:mod:`flows.drift_demo`) trains a head on prior A (planner-mix skill q_A), then
the prior changes to B (q_B). A change is a useful demo only when it *hurts* the stale head:
its AMC gain over Best-of-N (success of ``smc@N`` twisted by the head minus ``bon@N``, same
task and seed) falls from prior A to prior B, and a head retrained on B's rollouts recovers it.

Declared before running (the candidates and the rule; nothing below was tuned on the output):

- candidates, in this order: (q_A, q_B) = (0.8, 0.4), (0.8, 0.2), (0.8, 0.6), (0.4, 0.8);
- regimes, in this order: the demo's params (:func:`flows.drift_demo.demo_params`: TextCraft
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
- rule: the chosen change is the first (regime, candidate), regimes outer, in the orders
  above, whose ``fall`` interval lies below 0 and whose ``recovery`` interval lies above 0;
  none when no pair has both.

``python scripts/drift_candidates.py [out.json]`` (default ``metrics/drift_candidates.json``);
every RNG is seeded (the pipeline's seeds and the evaluation seeds below).
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
from flows.drift_demo import demo_params

CANDIDATES = ((0.8, 0.4), (0.8, 0.2), (0.8, 0.6), (0.4, 0.8))
TASKS = 24
SEEDS = (500, 501, 502)
N = 4
REGIMES = (6, 5, 4)
"""``smc.max_steps`` of each regime (the rest is the demo's params)."""
STAGES = ("collect", "dataset", "train")


def train_round(params_path: Path, q: float) -> str:
    """One round (collect, dataset, train) on prior q; the registered head's model URI."""
    data = yaml.safe_load(params_path.read_text())
    data["prior"]["options"]["q"] = q
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


def successes(params_path: Path, q: float, heads: dict[str, str], out: Path
              ) -> dict[str, dict[tuple[str, int], float]]:
    """Success per (task, seed) of bon@N and smc@N+<head> on prior q."""
    p = load_params(params_path)
    prior = p.prior.model_copy(update={"options": {**p.prior.options, "q": q}})
    specs = [f"bon@{N}", *(f"smc@{N}+{h}" for h in heads)]
    cfg = RunConfig(env=p.env, prior=prior, smc=p.smc, value=p.evaluate.zero_shot_value,
                    values={h: ValueConfig(name=p.evaluate.learned_value, options={"model": u})
                            for h, u in heads.items()},
                    methods=tuple(specs), split="test", max_tasks=TASKS, seeds=SEEDS,
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


def candidate(steps: int, qa: float, qb: float, root: Path) -> dict[str, Any]:
    """Train stale (q_A) and retrained (q_B) heads, evaluate, the paired fall and recovery."""
    os.chdir(root)
    params_path = root / "params.yaml"
    data = demo_params(qa)
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
    return {"max_steps": steps, "q_a": qa, "q_b": qb, **mean, "success": rates,
            "fall": summary(fall), "recovery": summary(rec),
            "hurts": bool(fall.hi < 0 and rec.lo > 0), "models": [stale, fresh]}


def one(steps: int, qa: float, qb: float) -> dict[str, Any]:
    """One (regime, candidate) in a fresh temp dir (its own MLflow store)."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="drift-cand-") as tmp:
        row = candidate(steps, qa, qb, Path(tmp))
    return {**row, "seconds": round(time.monotonic() - started, 1)}


def main(argv: list[str]) -> None:
    """Every (regime, candidate), each in its own process (MLflow caches its store per
    process); ``--one STEPS QA QB`` runs one and prints its JSON line."""
    if argv[:1] == ["--one"]:
        print("RESULT " + json.dumps(one(int(argv[1]), float(argv[2]), float(argv[3]))))
        return
    out = Path(argv[0] if argv else "metrics/drift_candidates.json").resolve()
    rows = []
    for steps in REGIMES:
        for qa, qb in CANDIDATES:
            proc = subprocess.run([sys.executable, __file__, "--one", str(steps), str(qa),
                                   str(qb)], capture_output=True, text=True, check=False)
            lines = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
            if proc.returncode or not lines:
                raise RuntimeError(f"candidate {(steps, qa, qb)} failed:\n{proc.stderr[-3000:]}")
            rows.append(json.loads(lines[-1][len("RESULT "):]))
            print(json.dumps(rows[-1]), flush=True)
    chosen = next((r for r in rows if r["hurts"]), None)
    doc = {"declared": {"regimes_max_steps": REGIMES, "candidates": CANDIDATES,
                        "tasks": TASKS, "seeds": SEEDS, "n": N,
                        "rule": "first (regime, candidate) with fall.hi < 0 and "
                                "recovery.lo > 0"},
           "candidates": rows,
           "chosen": None if chosen is None else {k: chosen[k] for k in
                                                  ("max_steps", "q_a", "q_b")}}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"chosen: {doc['chosen']}")


if __name__ == "__main__":
    main(sys.argv[1:])
