"""Declare the chosen regime's test set (issue 49, item 6), after the search and before any run.

Sizing: the test compares AMC with Best-of-N on the same (task, seed) pairs, so its noise is
that of two arms' paired outcomes. The search's own rollouts give it without any AMC run: per
task, the difference between two disjoint Best-of-N groups' observed outcomes (group 2k minus
group 2k + 1 of each seed, or seed 0 minus seed 1 when a seed holds one group), averaged over
the pairs. The effect to detect is half the chosen regime's room; the fewest tasks for 80%
power of the two-sided t test (noncentral t at that sd) is checked by the simulation of both
tests (:func:`studies.llm_regime.testset.power_calculation`).

Tasks: the chosen depth's tasks that no earlier embedded-LLM study ran or declared
(:func:`~studies.llm_regime.regime_search.tasks.touched_tasks`) and the search did not use,
drawn with a recorded seed. Writes ``studies/llm_regime/declared/llm-regime-search-test.json``.

    python -m studies.llm_regime.regime_search.declare_test
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from amc.envs.textcraft.env import TextCraftOptions, TextCraftSuite
from amc.value.room import success_step
from studies.llm_regime.regime_search.analyse import KEPT, read_records, task_histories
from studies.llm_regime.regime_search.tasks import touched_tasks
from studies.llm_regime.testset import power_calculation

HERE = Path(__file__).parent
OUT = HERE.parent / "declared" / "llm-regime-search-test.json"
SEED = 4906
"""The draw of the test tasks."""
SIZING = KEPT / "test-sizing.json"
"""Where the sizing goes when no fresh set is large enough (nothing is declared then)."""


class Infeasible(Exception):
    """The fresh pool is smaller than the tasks the power calculation asks for."""

    def __init__(self, sizing: dict[str, Any]) -> None:
        super().__init__(f"{sizing['tasks_needed']} tasks needed, only {sizing['fresh_tasks']} "
                         f"fresh at depth {sizing['regime']['depth']}")
        self.sizing = sizing


def null_differences(depth: int, n: int, horizon: int, kept: Path = KEPT) -> list[float]:
    """Per task: mean difference of two disjoint Best-of-N groups' observed outcomes."""
    out = []
    for hs in task_histories(read_records(kept / f"depth{depth}")).values():
        groups: dict[tuple[int, int], float] = {}
        for seed, i, h in hs:
            at = success_step(h, 1.0)
            win = at is not None and at <= horizon
            groups[(seed, i // n)] = max(groups.get((seed, i // n), 0.0), float(win))
        keys = sorted(groups)
        pairs = list(zip(keys[0::2], keys[1::2], strict=False))
        out.append(float(np.mean([groups[a] - groups[b] for a, b in pairs])))
    return out


def fresh_tasks(depth: int, search_tasks: list[str]) -> list[str]:
    suite = TextCraftSuite(TextCraftOptions(min_depth=depth, max_depth=depth, n_distractors=10))
    used = touched_tasks() | set(search_tasks)
    pool = suite.task_ids("train") + suite.task_ids("test")
    return sorted((t for t in pool if t not in used), key=int)


def declaration(room: dict[str, Any], protocol: dict[str, Any],
                kept: Path = KEPT) -> dict[str, Any]:
    c = room["chosen"]
    if c is None:
        raise SystemExit("no regime was chosen: nothing to declare (see room.md)")
    d = null_differences(c["depth"], c["n"], c["horizon"], kept)
    effect = c["room"] / 2
    first = power_calculation(d, effect=effect, n_plan=20)
    n_plan = max(20, int(first["tasks_needed_t"]))
    pool = fresh_tasks(c["depth"], protocol["collection"]["tasks"][str(c["depth"])])
    if n_plan > len(pool):
        at_pool = power_calculation(d, effect=effect, n_plan=len(pool))
        raise Infeasible({
            "regime": {k: c[k] for k in ("depth", "horizon", "n", "step", "beta")},
            "room_on_validation": c["room"], "effect": effect, "tasks_needed": n_plan,
            "fresh_tasks": len(pool), "noise_sd_per_task": at_pool["pilot_sd"],
            "t_power_at_fresh_pool": at_pool["t_power_at_plan"],
            "mde_at_fresh_pool": at_pool["mde_at_plan"],
            "simulated_at_fresh_pool": at_pool["simulated"]})
    pick = np.random.default_rng(SEED).choice(pool, n_plan, replace=False)
    n = c["n"]
    return {
        "name": "llm-regime-search-test", "issue": 49,
        "regime": {k: c[k] for k in ("depth", "horizon", "n", "step", "beta")},
        "room_on_validation": {k: c[k] for k in ("room", "room_lo", "room_hi", "p")},
        "tasks": sorted((str(t) for t in pick), key=int), "task_seed": SEED,
        "task_pool": f"depth-{c['depth']} TextCraft tasks (train and test splits, 10 "
                     "distractors) that no earlier embedded-LLM study ran or declared and the "
                     "regime search did not use",
        "seeds": [0, 1, 2],
        "methods": ["react", f"bon@{n}", f"smc@{n}", f"smc@{n}+challenger",
                    f"smc@{n}+rollout"],
        "primary": {"a": f"smc@{n}+challenger", "b": f"bon@{n}", "metric": "success",
                    "statement": f"AMC@{n} (learned value) - Best-of-{n} on success, paired by "
                    "(task, seed), seeds averaged within a task; two-sided 95% t interval "
                    "over tasks and the exact sign-flip p; separable only when the interval "
                    "excludes 0 and p < 0.05"},
        "power": {**power_calculation(d, effect=effect, n_plan=n_plan),
                  "noise": "per task, two disjoint Best-of-N groups' observed outcomes "
                           "(the search's rollouts), as the paired difference of two arms"},
        "excluded_from_collection": True,
    }


def main() -> int:
    room = json.loads((KEPT / "room.json").read_text())
    protocol = json.loads((HERE / "protocol.json").read_text())
    if OUT.exists():
        raise SystemExit(f"{OUT} exists: a declaration is written once")
    try:
        decl = declaration(room, protocol)
    except Infeasible as err:
        SIZING.write_text(json.dumps(err.sizing, indent=1, sort_keys=True) + "\n")
        z = err.sizing
        text = (f"No test set declared for the chosen regime: half its room "
                f"({z['effect']:+.3f}) needs {z['tasks_needed']} tasks for 80% power (per-task "
                f"noise sd {z['noise_sd_per_task']:.3f} from two Best-of-{z['regime']['n']} "
                f"arms), and only {z['fresh_tasks']} depth-{z['regime']['depth']} tasks are "
                f"fresh; on all of them the t test has power {z['t_power_at_fresh_pool']:.2f} "
                f"and detects {z['mde_at_fresh_pool']:+.3f}.")
        SIZING.with_suffix(".md").write_text(text + "\n")
        print(text)
        return 0
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(decl, indent=1) + "\n")
    p = decl["power"]
    print(f"wrote {OUT}: {len(decl['tasks'])} tasks x 3 seeds; effect {p['effect']:.3f}, "
          f"t power {p['t_power_at_plan']:.2f}" if math.isfinite(p["t_power_at_plan"]) else "")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
