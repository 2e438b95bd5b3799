"""A declared test set: its tasks, seeds, methods and primary comparison, fixed before it runs.

A test set is *declared* in a JSON file committed before any of its runs (git history shows
the order). The file holds the task ids, the seeds, the methods, the primary comparison and
the power calculation that sized it. Train-split tasks in a declared set were never used by a
collection, a calibration or a choice; once declared they are excluded from every later
collection (each params file of this repository lists the declaration in
``collect.exclude_tasks_files``, which :mod:`amc.pipeline.collect` applies), so no value is
ever trained on them.

Power calculation (:func:`power_calculation`, pure): from the per-task paired differences of
a kept pilot run (seeds averaged within each task, the unit the test uses), the fewest tasks
whose two-sided t test detects ``effect`` with the wanted power (noncentral t at the pilot's
sd), plus a seeded simulation of both tests on the planned size: tasks drawn from the pilot's
centred per-task differences shifted by ``effect``, the t interval and the exact sign-flip p
(:func:`amc.stats.sign_flip_p`) each at the level. ``python -m studies.llm_regime.testset``
writes a declaration from the kept LLM-regime evaluation (see ``--help``).
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from amc import stats
from amc.pipeline.collect import task_identity

DECLARED = Path(__file__).parent / "declared"
"""Committed declarations: every collection that lists one skips its tasks."""


def power_calculation(per_task: Sequence[float], *, effect: float, level: float = 0.05,
                      power: float = 0.8, n_plan: int, sims: int = 4000, seed: int = 0,
                      n_flips: int = 2000) -> dict[str, Any]:
    """Sizing of a paired two-sided test over tasks from a pilot's per-task differences."""
    d = np.asarray(per_task, dtype=np.float64)
    mean, se = stats.mean_se(d)
    sd = float(d.std(ddof=1))
    need = stats.tasks_for_power(effect, sd, level=level, power=power)
    from scipy.stats import chi2

    sd_hi = sd * math.sqrt((d.size - 1) / float(chi2.ppf(1 - power, d.size - 1)))
    rng = np.random.default_rng(seed)
    draws = rng.choice(d - d.mean(), size=(sims, n_plan)) + effect
    m, s = stats.row_mean_se(draws)
    tq = stats.t_quantile(1 - level / 2, n_plan - 1)
    t_rej = np.abs(m) > tq * np.where(s > 0, s, np.inf)
    signs = np.random.default_rng(seed + 1).choice([-1.0, 1.0], size=(n_flips, n_plan))
    null = np.abs(draws @ signs.T)  # (sims, flips): |sum| under each sign assignment
    p = (1 + (null >= np.abs(draws.sum(axis=1))[:, None] - 1e-9).sum(axis=1)) / (1 + n_flips)
    sf_rej = p < level
    return {
        "pilot_tasks": int(d.size), "pilot_mean": mean, "pilot_se": se, "pilot_sd": sd,
        "effect": effect, "level": level, "power": power, "alternative": "two-sided",
        "tasks_needed_t": need, "n_plan": n_plan,
        "t_power_at_plan": stats.t_power(effect, sd, n_plan, level=level),
        "pilot_sd_upper_80": sd_hi,
        "t_power_at_plan_sd_upper_80": stats.t_power(effect, sd_hi, n_plan, level=level),
        "mde_at_plan": stats.mde(sd, n_plan, level=level, power=power,
                                 alternative="two-sided"),
        "simulated": {"sims": sims, "seed": seed, "flips": n_flips,
                      "t_power": float(t_rej.mean()), "sign_flip_power": float(sf_rej.mean()),
                      "both_power": float((t_rej & sf_rej).mean())},
    }


def per_task_differences(eval_dir: Path, a: str, b: str, metric: str,
                         seeds: Sequence[int]) -> dict[str, float]:
    """Per task, the seed mean of a - b (``<a>__seed<k>.jsonl.gz`` files of ``eval_dir``)."""
    def load(spec: str) -> dict[tuple[str, int], float]:
        out = {}
        for s in seeds:
            with gzip.open(eval_dir / f"{spec}__seed{s}.jsonl.gz", "rt") as f:
                for line in f:
                    r = json.loads(line)
                    out[(str(r["task_id"]), s)] = float(r["metrics"][metric])
        return out

    ra, rb = load(a), load(b)
    return stats.task_means((k[0], ra[k] - rb[k]) for k in sorted(set(ra) & set(rb)))


def used_train_tasks(trajectory_files: Sequence[Path]) -> list[str]:
    """Task ids present in kept collection files (JSON lines with ``task_id``)."""
    ids: set[str] = set()
    for f in trajectory_files:
        with open(f) as fh:
            ids.update(str(json.loads(line)["task_id"]) for line in fh if line.strip())
    return sorted(ids, key=lambda t: (len(t), t))


def choose_train_tasks(train: Sequence[str], used: Sequence[str], k: int, seed: int
                       ) -> list[str]:
    """A seeded sample of k train tasks that were never used, in split order."""
    fresh = [t for t in train if t not in set(used)]
    if k > len(fresh):
        raise ValueError(f"{k} fresh train tasks wanted, only {len(fresh)} unused")
    pick = set(np.random.default_rng(seed).choice(len(fresh), size=k, replace=False).tolist())
    return [t for i, t in enumerate(fresh) if i in pick]


def _args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m studies.llm_regime.testset",
                                 description="Write a test-set declaration (power + tasks).")
    ap.add_argument("--params", default="configs/llm-regime/params.yaml")
    ap.add_argument("--pilot", default="evidence/llm-regime/eval")
    ap.add_argument("--trajectories", default="evidence/llm-regime/trajectories")
    ap.add_argument("--effect", type=float, default=0.06)
    ap.add_argument("--min-tasks", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0, help="seed of the train-task sample")
    ap.add_argument("--name", default="llm-regime-testset60")
    ap.add_argument("--out", default=None, help="default: studies/llm_regime/declared/<name>.json")
    return ap.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    from amc.pipeline.params import load_params
    from amc.registry import ENVIRONMENTS

    a = _args(argv)
    p = load_params(a.params)
    seeds, primary = [0, 1, 2], {"a": "smc@4+challenger", "b": "bon@4", "metric": "oracle_best"}
    diffs = per_task_differences(Path(a.pilot), primary["a"], primary["b"], primary["metric"],
                                 seeds)
    sd = float(np.std(list(diffs.values()), ddof=1))
    n_plan = max(a.min_tasks, stats.tasks_for_power(a.effect, sd))
    pw = power_calculation(list(diffs.values()), effect=a.effect, n_plan=n_plan)
    valid = ENVIRONMENTS.validate(p.env.name, p.env.options)
    opts = {} if valid is None else valid.model_dump(mode="json")
    suite = ENVIRONMENTS.build(p.env.name, p.env.options)
    try:
        test, train = suite.task_ids("test"), suite.task_ids("train")
    finally:
        suite.close()
    used = used_train_tasks(sorted(Path(a.trajectories).glob("*.jsonl")))
    extra = choose_train_tasks(train, used, n_plan - len(test), a.seed)
    dec = {
        "name": a.name,
        "env": {"name": p.env.name, "options": opts, "identity": task_identity(p.env.name, opts)},
        "tasks": test + extra, "test_split_tasks": test, "train_split_tasks": extra,
        "train_sample_seed": a.seed, "used_train_tasks": used,
        "used_train_tasks_sources": (
            "the LLM regime's collection and calibration (its kept trajectories); the "
            "earlier profile (first 8 train tasks) and the GRPO comparison (first 4 / 12 train "
            "tasks, no distractors) used a prefix of the same list; the sweeps ran depth-2 "
            "tasks only (other goal ids)"),
        "seeds": seeds, "methods": ["react", "bon@4", "smc@4", "smc@4+challenger"],
        "primary": {**primary, "statement": (
            "AMC@4 - Best-of-4 on the oracle best-of-pool, paired by (task, seed), seeds "
            "averaged within a task; two-sided 95% t interval over tasks and the exact "
            "sign-flip p; separable only when the interval excludes 0 and p < 0.05")},
        "power": pw,
        "excluded_from_collection": True,
    }
    out = Path(a.out) if a.out else DECLARED / f"{a.name}.json"
    if out.exists():
        print(f"error: {out} exists: a declaration is written once, before its runs")
        return 2
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(dec, indent=1) + "\n")
    sim = pw["simulated"]
    print(f"{out}: {len(dec['tasks'])} tasks ({len(test)} test + {len(extra)} train); "
          f"t power {pw['t_power_at_plan']:.3f}, sign-flip {sim['sign_flip_power']:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
