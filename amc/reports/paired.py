"""Paired differences to Best-of-N: every SMC-type method minus Best-of-N at the same N.

Shared by the pipeline's ``evaluate`` stage (its record), its ``report`` stage and the results
document (:mod:`amc.reports.run_summary`), so all three show the same statistic.
"""

from __future__ import annotations

import math
from typing import Any

from amc.smc.records import TaskResult
from amc.stats import paired_difference

PAIRED = ("deployable_reward", "oracle_best", "max_weight_reward", "weighted_mean_reward",
          "success")
"""Metrics whose paired difference to Best-of-N the record holds."""


def paired_to_bon(methods: dict[str, dict[str, Any]], results: dict[str, list[TaskResult]]
                  ) -> dict[str, dict[str, Any]]:
    """Every SMC-type method minus Best-of-N at the same N, paired by (task, seed).

    Per metric k: ``k`` (mean over tasks of the within-task mean difference), ``k_se``,
    ``k_lo`` / ``k_hi`` (95% t interval; None when undefined); ``runs`` pairs, ``tasks``.
    """
    by_spec: dict[str, dict[tuple[str, int], Any]] = {}
    for key, rs in results.items():
        for r in rs:
            by_spec.setdefault(key.rsplit("#", 1)[0], {})[(r.task_id, r.seed)] = r.metrics
    bon = {m["n"]: s for s, m in methods.items() if m["role"] == "bon"}
    out: dict[str, dict[str, Any]] = {}
    for spec, m in methods.items():
        base = bon.get(m["n"])
        if m["role"] in ("react", "bon") or base is None:
            continue
        a, b = by_spec.get(spec, {}), by_spec.get(base, {})
        row: dict[str, Any] = {"method": spec, "baseline": base}
        for k in PAIRED:
            d = paired_difference({x: v.get(k, math.nan) for x, v in a.items()},
                                  {x: v.get(k, math.nan) for x, v in b.items()})
            row.update({"runs": d.pairs, "tasks": d.tasks, k: _num(d.mean),
                        k + "_se": _num(d.se), k + "_lo": _num(d.lo), k + "_hi": _num(d.hi),
                        k + "_p": _num(d.p)})
        out[spec] = row
    return out


def _num(x: float) -> float | None:
    """JSON-safe: NaN (undefined) becomes None."""
    return None if math.isnan(x) else float(x)
