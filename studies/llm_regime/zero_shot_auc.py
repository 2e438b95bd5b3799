"""Does the zero-shot value rank siblings? The yes/no value on the rounds' held-out states.

Issue 49, item 3: the number-asking zero-shot value scored every state 1.0 (a constant), so
"learned ~ zero-shot" compared nothing. This scores ``zero-shot-yesno`` (P(Yes) from the
embedded Gemma's next-token log-probabilities) on the states the rounds' learned values were
measured on (:mod:`studies.llm_regime.round_values`: prefixes of the declared 60-task set's
kept Best-of-4 rollouts), restricted to the resampling steps (2 and 4) of a seeded sample of
the tasks that have a mixed (task, seed) group there -- a group without a success and a failure
has no pair to rank. Reports the within-(task, step) AUC per step with the number of mixed
groups, the share of constant groups, the calls; the learned rounds' figures on the full set
beside it (``heldout-values.json``).

    python -m studies.llm_regime.zero_shot_auc [--tasks 15]
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

import numpy as np

from amc.config import EnvConfig, PriorConfig
from amc.registry import ENVIRONMENTS, PRIORS, VALUES, load_builtin_components
from amc.results import write_json_atomic
from amc.value.held_out import constant_share, score_all
from amc.value.metrics import auc_within_by_step
from studies.llm_regime.round_values import States, held_out_states, load_results

REPO = Path(__file__).resolve().parents[2]
EVAL = REPO / "evidence/llm-regime/testset60/eval"
OUT = REPO / "evidence/llm-regime/zero-shot-yesno-auc.json"
STEPS = (2, 4)
SEED = 4903


def subset(s: States, tasks: int, seed: int) -> tuple[States, list[str]]:
    """The states at STEPS of a seeded sample of tasks with a mixed group at a step."""
    mixed = sorted({g[0] for g in set(s.groups) if g[1] in STEPS
                    and len({bool(y) for y, h in zip(s.success, s.groups, strict=True)
                             if h == g}) == 2}, key=int)
    picked = sorted(np.random.default_rng(seed).choice(mixed, min(tasks, len(mixed)),
                                                       replace=False).tolist(), key=int)
    keep = [i for i, g in enumerate(s.groups) if g[1] in STEPS and g[0] in set(picked)]
    return States([s.histories[i] for i in keep], s.reward_so_far[keep], s.target[keep],
                  s.success[keep], [s.groups[i] for i in keep], s.rollouts), picked


async def score(s: States) -> tuple[list[float], Any]:
    load_builtin_components()
    env = EnvConfig(name="textcraft", options={"reward": "binary", "max_depth": 1,
                                               "n_distractors": 10})
    ctx: dict[str, Any] = {"env_name": env.name,
                           "env_options": ENVIRONMENTS.validate(env.name, env.options)}
    prior_cfg = PriorConfig(name="embedded", options={
        "server": "python", "cache": True,
        "cache_path": str(REPO / "runs/zero-shot-auc/responses.sqlite")})
    prior = PRIORS.build(prior_cfg.name, prior_cfg.options, **ctx)
    try:
        value = VALUES.build("zero-shot-yesno", None, beta=1.0, prior=prior, **ctx)
        try:
            return await score_all(value, s.histories, 64)
        finally:
            await value.aclose()
    finally:
        await prior.aclose()


def markdown(out: dict[str, Any]) -> str:
    """The zero-shot value's figures beside the learned rounds' (a short table)."""
    def f(x: float | None) -> str:
        return "-" if x is None else f"{x:.3f}"

    z = out["auc_within_by_step"]
    lines = ["| value | states | within AUC step 2 | within AUC step 4 | constant groups |",
             "|---|---|---|---|---|",
             f"| zero-shot-yesno (P(Yes), embedded Gemma) | {out['states']} | {f(z['2'])} "
             f"({out['mixed_groups_by_step']['2']} mixed groups) | {f(z['4'])} "
             f"({out['mixed_groups_by_step']['4']} mixed groups) "
             f"| {f(out['constant_share'])} |"]
    for q in out["learned_rounds_full_set"]:
        lines.append(f"| learned, round {q['round']} (full held-out set) | - "
                     f"| {f(q.get('auc_within_step2'))} | {f(q.get('auc_within_step4'))} | - |")
    best = max((v for v in z.values() if v is not None), default=None)
    verdict = ("informative (within AUC above 0.55 at a resampling step)"
               if best is not None and best > 0.55 else
               f"uninformative: its best within AUC is {f(best)}, not above 0.55")
    return "\n".join([*lines, "", f"The zero-shot yes/no value is {verdict}; the zero-shot "
                       "value that asked for a number scored every state 1.0.", ""])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=15)
    args = ap.parse_args(argv)
    states = held_out_states(load_results(EVAL, "bon@4"), 1.0)
    s, tasks = subset(states, args.tasks, SEED)
    scores, usage = asyncio.run(score(s))
    pred = np.asarray(scores, float)
    by_step = auc_within_by_step(pred, s.reward_so_far, s.success, s.groups)
    mixed = {t: sum(1 for g in set(s.groups) if g[1] == t and len(
        {bool(y) for y, h in zip(s.success, s.groups, strict=True) if h == g}) == 2)
        for t in STEPS}
    learned = json.loads((REPO / "evidence/llm-regime/rounds/heldout-values.json").read_text())
    out = {"value": "zero-shot-yesno", "prior": "embedded (Gemma-3-270M)",
           "states": len(s.histories), "tasks": tasks, "task_seed": SEED,
           "auc_within_by_step": {str(t): by_step.get(str(t)) for t in STEPS},
           "mixed_groups_by_step": {str(t): mixed[t] for t in STEPS},
           "constant_share": constant_share(scores, s.groups),
           "score_mean": float(np.nanmean(pred)), "score_sd": float(np.nanstd(pred)),
           "value_calls": int(getattr(usage, "calls", 0)),
           "learned_rounds_full_set": [
               {k: v for k, v in q.items() if k == "round" or k.startswith("auc_within")}
               for q in learned["rounds"]]}
    write_json_atomic(OUT, out)
    OUT.with_suffix(".md").write_text(markdown(out))
    print(json.dumps({k: out[k] for k in ("states", "auc_within_by_step", "constant_share",
                                          "score_sd")}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
