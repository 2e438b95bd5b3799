"""The value options scored in the CHOSEN regime's prior states (issue 50, item 1, after 49).

Issue 49's declared regime search chose TextCraft depth 1, horizon H = 8 steps, N = 4,
resampling once after step 1, beta = 0.1 (``evidence/llm-regime/regime-search/room.md``).
The value steers there at one step only: step 1. This module measures the old study's
candidates (the same objectives, renderings, temperature fit and training data as
:mod:`studies.value_options.measure`: heads on frozen MiniLM-L6 features of the rounds' 24
train tasks, the dataset stage's seeded 20% validating) on the chosen regime's prior states
at step 1, where "success" is success of the rollout within its horizon:

- ``search-depth1-h8`` (the fixed held-out set of the chosen regime): the regime search's
  depth-1 Best-of-8 prior rollouts (``regime-search/depth1/bon@8__seed{0,1}``, up to 8 steps),
  restricted to the search tasks no round trains on;
- ``testset60-h5`` (beside it, never pooled with it): the declared 60-task set's Best-of-4
  prior rollouts at step 1 -- their horizon is 5 steps, not 8, so "success" is a different
  event.

A state at step 1 is the prefix after one action of a rollout that had not ended there (as the
old study's held-out prefixes); siblings are the states of one task at step 1, pooled over
seeds (the old study's (task, step) groups). Offline evidence only: no protocol was declared
for it and no test cell ran.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from studies.value_options import states
from studies.value_options.measure import (
    BETA,
    BOOT,
    OPTIONS,
    SEEDS,
    bootstrap,
    fit_option,
    task_counts,
)

STEP = 1
"""The chosen regime's only resampling step."""
REGIME = {"env": "textcraft", "depth": 1, "horizon": 8, "n": 4, "resample_after_step": STEP,
          "beta": BETA}
"""The regime issue 49's declared rule chose (``regime-search/room.json``)."""
SEARCH = states.ROOT / "evidence/llm-regime/regime-search/depth1"
HELD_OUT_SETS = {"search-depth1-h8": (SEARCH, "bon@8", 8), "testset60-h5":
                 (states.HELD_OUT, "bon@4", 5)}
"""name -> (folder, spec, horizon) of each held-out set, in the order reported."""


def at_step(s: states.Split, step: int) -> states.Split:
    """The states of ``s`` at ``step`` (same order)."""
    idx = [i for i, g in enumerate(s.groups) if g[1] == step]
    return states.Split([s.text[i] for i in idx], s.target[idx], s.reward_so_far[idx],
                        s.success[idx], [s.groups[i] for i in idx], [s.runs[i] for i in idx])


def held_out(render: Any, train_tasks: set[str]) -> tuple[dict[str, states.Split],
                                                          dict[str, Any]]:
    """Each held-out set's step-1 states (train tasks removed) and what was removed."""
    out, info = {}, {}
    for name, (folder, spec, horizon) in HELD_OUT_SETS.items():
        results = states.load_results(folder, spec)
        tasks = sorted({str(r.task_id) for r in results})
        kept = [r for r in results if str(r.task_id) not in train_tasks]
        sp = at_step(states._states(kept, render, with_last=False), STEP)
        out[name] = sp
        info[name] = {"folder": str(folder.relative_to(states.ROOT)), "spec": spec,
                      "horizon": horizon, "tasks": len(tasks),
                      "tasks_in_training": len(tasks) - len({str(r.task_id) for r in kept}),
                      "tasks_kept": len({str(r.task_id) for r in kept}),
                      "seeds": sorted({int(r.seed) for r in kept}),
                      "rollouts": sum(len(r.trajectories) for r in kept),
                      "rollout_successes": int(sum(sum(float(x.reward) for x in t.steps) >= 1.0
                                                   for r in kept for t in r.trajectories)),
                      "states_step1": len(sp.text),
                      "success_step1": int(sp.success.sum())}
    return out, info


def build(variant: str, tok: Any) -> tuple[dict[str, states.Split], dict[str, Any]]:
    """train / validation (the old study's) and the held-out sets, rendered by ``variant``."""
    sp = states.build(variant, tok)
    train_tasks = {g[0] for k in ("train", "validation") for g in sp[k].groups}
    hs, info = held_out(states.renderer(variant, tok), train_tasks)
    return {"train": sp["train"], "validation": sp["validation"], **hs}, info


def train_and_score(name: str, sp: dict[str, states.Split], seed: int) -> dict[str, Any]:
    """One objective's head (seed ``seed``), its fitted T and each held-out set's figures."""
    from amc.value.train_head import head_predict
    from studies.value_options.sibling_metrics import sibling_metrics

    model, fit, trained = fit_option(name, sp, seed)
    out: dict[str, Any] = {**trained, "temperature": fit.temperature,
                           "temperature_at_bound": fit.at_bound, "held_out": {}, "_score": {}}
    for h in HELD_OUT_SETS:
        s = sp[h]
        pred = head_predict(model, s.features())
        sib = sibling_metrics(pred, s.reward_so_far, s.success, s.groups, (STEP,), BETA,
                              fit.temperature)
        sib["weight_ratio_fitted"] = math.exp(sib[f"spread_step{STEP}"] / fit.temperature)
        out["held_out"][h] = {k: v for k, v in sib.items() if k.endswith(f"step{STEP}")
                              or k == "weight_ratio_fitted"}
        out["_score"][h] = np.clip(pred + s.reward_so_far, 0, 1)
    return out


def measure_variant(variant: str, tok: Any, cache: Path) -> dict[str, Any]:
    """All options (every seed) on one rendering; the bootstrap of seed 0 per held-out set."""
    sp, info = build(variant, tok)
    emb = states.embed(sp, cache)
    res: dict[str, Any] = {}
    for name in OPTIONS:
        runs = {seed: train_and_score(name, sp, seed) for seed in SEEDS}
        r = runs[SEEDS[0]]
        r["seeds"] = {str(seed): {h: o["held_out"][h][f"auc_within_step{STEP}"]
                                  for h in HELD_OUT_SETS} for seed, o in runs.items()}
        res[name] = r
    boot = {}
    for h in HELD_OUT_SETS:
        counts = {k: task_counts(r["_score"][h], sp[h].success, sp[h].groups, STEP)
                  for k, r in res.items()}
        boot[h] = bootstrap(counts, "regression", seed=STEP)
    for r in res.values():
        del r["_score"]
    return {"embedding": emb, "held_out_sets": info,
            "rows": {k: len(s.text) for k, s in sp.items()}, "options": res,
            "bootstrap": boot}


def document(variants: list[str], tok: Any, cache: Path, prov: dict[str, Any]
             ) -> dict[str, Any]:
    """The whole ``results-chosen.json`` document."""
    return {"provenance": prov, "regime": REGIME, "step": STEP, "beta": BETA,
            "seeds": list(SEEDS), "options": OPTIONS, "bootstrap_draws": BOOT,
            "variants": {v: measure_variant(v, tok, cache) for v in variants}}
