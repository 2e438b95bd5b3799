"""A declared test set's section of ``docs/results.md``: the primary comparison first.

A *declared* test set (a JSON file evaluated through ``evaluate.tasks_file``) fixes the tasks,
seeds, methods, the primary comparison and the power calculation in a file committed before it
runs. Its section reports, in this order: what was declared (size, seeds, the
primary comparison as declared, the planned power), the primary result read with the same
rule as every other paired difference (separable only when the 95% t interval excludes 0 and
the exact sign-flip p < 0.05), the *realised* power (the per-task sd the run observed and the
minimum detectable effect it implies at 80% power), then the run's full table and reading.

Pure rendering from two JSON records (the declared file and the resolved run summary); the
numbers are computed here from them, so none is typed into the document.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from amc.stats import mde

PowerPlan = Mapping[str, Any]


def _f(x: Any, spec: str = "+.3f") -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def primary_row(declared: Mapping[str, Any], run: Mapping[str, Any]) -> Mapping[str, Any]:
    """The run's paired row of the declared primary comparison (clear error when absent)."""
    prim = declared["primary"]
    row = (run.get("paired") or {}).get(prim["a"])
    if row is None or row.get("baseline") != prim["b"]:
        raise ValueError(f"the run has no paired row {prim['a']} − {prim['b']}: it is not the "
                         f"evaluation of {declared.get('name', 'this declaration')}")
    if row.get(prim["metric"]) is None:
        raise ValueError(f"the paired row {prim['a']} has no metric {prim['metric']!r}")
    return row


def primary_verdict(row: Mapping[str, Any], metric: str, level: float = 0.05) -> str:
    """``separable`` / ``not separable`` by the project's one rule (interval and exact p)."""
    lo, hi, p = row.get(metric + "_lo"), row.get(metric + "_hi"), row.get(metric + "_p")
    if lo is None or hi is None or p is None:
        return "not separable (no interval or exact p recorded)"
    if not (lo > 0 or hi < 0):
        return "not separable: the 95% interval includes 0"
    if p >= level:
        return f"not separable: the interval excludes 0 but the exact p = {p:.3g} ≥ {level:g}"
    return "separable: " + ("AMC is better" if lo > 0 else "AMC is worse")


def realised_power(row: Mapping[str, Any], metric: str, plan: PowerPlan) -> dict[str, float]:
    """Per-task sd of the primary difference as observed, and the MDE it implies.

    sd = s.e. · sqrt(#tasks) (the s.e. is over tasks); the MDE uses the declared level, power
    and alternative, so it is comparable with the planned effect.
    """
    tasks = int(row["tasks"])
    sd = float(row[metric + "_se"]) * math.sqrt(tasks)
    alt = plan.get("alternative", "two-sided")
    return {"tasks": tasks, "sd": sd,
            "mde": mde(sd, tasks, level=float(plan["level"]), power=float(plan["power"]),
                       alternative=alt)}


def declared_section(title: str, declared: Mapping[str, Any], run: Mapping[str, Any],
                     declared_path: str, run_path: str) -> list[str]:
    """The section's markdown lines (before the run's own table, which the caller appends)."""
    prim, plan = declared["primary"], declared.get("power") or {}
    row = primary_row(declared, run)
    k = prim["metric"]
    real = realised_power(row, k, plan) if plan else None
    lines = [
        f"\n## {title}\n",
        f"_Declared in `{declared_path}` (committed before the run: tasks, seeds, methods, the "
        f"primary comparison and the power calculation); results from `{run_path}`._\n",
        f"- {len(declared['tasks'])} tasks ({len(declared.get('test_split_tasks', []))} of the "
        f"default test split and {len(declared.get('train_split_tasks', []))} depth-1 train "
        "tasks that no collection, calibration or choice had used, excluded from every later "
        f"collection) × seeds {list(declared['seeds'])}; methods "
        f"{', '.join(f'`{m}`' for m in declared['methods'])}.",
        f"- Primary comparison, as declared: {prim['statement']}.",
        f"- **Primary result: `{prim['a']}` − `{prim['b']}` on {k} = {_f(row[k])} "
        f"[{_f(row.get(k + '_lo'))}, {_f(row.get(k + '_hi'))}], exact sign-flip p "
        f"{_f(row.get(k + '_p'), '.3g')} over {row['tasks']} tasks ({row['runs']} paired "
        f"runs) → {primary_verdict(row, k)}.**",
    ]
    if plan and real is not None:
        lines.append(
            f"- Power, planned: from the {plan['pilot_tasks']}-task pilot (per-task sd "
            f"{_f(plan['pilot_sd'], '.3f')}), {plan['tasks_needed_t']} tasks give "
            f"{plan['power']:.0%} power at {_f(plan['effect'])} ({plan['alternative']}, level "
            f"{plan['level']:g}); {plan['n_plan']} were declared (power "
            f"{_f(plan.get('t_power_at_plan'), '.2f')} at the pilot's sd). Realised: per-task "
            f"sd {_f(real['sd'], '.3f')} over {real['tasks']} tasks, so the smallest effect "
            f"this set detects with {plan['power']:.0%} power is {_f(real['mde'], '.3f')}.")
    return lines
