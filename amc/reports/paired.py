"""Paired differences to Best-of-N: every SMC-type method minus Best-of-N at the same N; and
the learned value's AMC minus SMC with the other (zero-shot) value at the same N.

Shared by the pipeline's ``evaluate`` stage (its record), its ``report`` stage and the results
document (:mod:`amc.reports.run_summary`), so all three show the same statistic.
"""

from __future__ import annotations

import math
from collections.abc import Callable
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
    return _paired(methods, results, "bon", lambda m: m["role"] not in ("react", "bon"))


def paired_to_zero_shot(methods: dict[str, dict[str, Any]],
                        results: dict[str, list[TaskResult]]) -> dict[str, dict[str, Any]]:
    """Every AMC method (a learned value) minus plain SMC (the other value: zero-shot) at the
    same N, paired by (task, seed), in :func:`paired_to_bon`'s row format plus ``calls`` /
    ``baseline_calls``, each side's mean prior calls per paired run. Which value steers
    better is read at the calls each spent: a zero-shot value asks the prior for every score,
    so its run makes more prior calls than AMC's at the same N (``calls`` beside
    ``baseline_calls``)."""
    return _paired(methods, results, "smc", lambda m: m["role"] == "amc", calls=True)


def _paired(methods: dict[str, dict[str, Any]], results: dict[str, list[TaskResult]],
            base_role: str, wanted: Callable[[dict[str, Any]], bool], calls: bool = False
            ) -> dict[str, dict[str, Any]]:
    by_spec: dict[str, dict[tuple[str, int], TaskResult]] = {}
    for key, rs in results.items():
        for r in rs:
            by_spec.setdefault(key.rsplit("#", 1)[0], {})[(r.task_id, r.seed)] = r
    base_of = {m["n"]: s for s, m in methods.items() if m["role"] == base_role}
    out: dict[str, dict[str, Any]] = {}
    for spec, m in methods.items():
        base = base_of.get(m["n"])
        if not wanted(m) or base is None:
            continue
        a, b = by_spec.get(spec, {}), by_spec.get(base, {})
        row: dict[str, Any] = {"method": spec, "baseline": base}
        if calls:
            both = sorted(set(a) & set(b))
            row.update(calls=_mean_calls(a, both), baseline_calls=_mean_calls(b, both))
        for k in PAIRED:
            d = paired_difference({x: v.metrics.get(k, math.nan) for x, v in a.items()},
                                  {x: v.metrics.get(k, math.nan) for x, v in b.items()})
            row.update({"runs": d.pairs, "tasks": d.tasks, k: _num(d.mean),
                        k + "_se": _num(d.se), k + "_lo": _num(d.lo), k + "_hi": _num(d.hi),
                        k + "_p": _num(d.p)})
        out[spec] = row
    return out


def _mean_calls(rs: dict[tuple[str, int], TaskResult], keys: list[tuple[str, int]]
                ) -> float | None:
    """Mean prior calls per run over ``keys`` (None without runs)."""
    return sum(rs[k].usage.calls for k in keys) / len(keys) if keys else None


def _num(x: float) -> float | None:
    """JSON-safe: NaN (undefined) becomes None."""
    return None if math.isnan(x) else float(x)
