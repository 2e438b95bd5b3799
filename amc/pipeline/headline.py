"""Headline metrics: the few flat numbers per stage that DVC shows (``dvc metrics show``).

``dvc metrics show`` and ``dvc exp show`` print one column per key of every metrics file, so
the DVC metrics files hold only what a reader compares across experiments, with short names
and rounded values, so the whole table fits a 120-column terminal:

- ``metrics/eval.json``: ``complete`` (1 when every (method, seed, task) is in) and, at the
  largest N, the headline metric of ``react``, ``bon``, ``smc`` and ``amc`` (the challenger):
  ``deployable_reward`` with a selection value, else ``oracle_best``.
- ``metrics/promotion.json``: ``promoted`` and, only when the gate tested, ``delta`` (mean
  paired improvement) and ``p`` (the gate's p-value): ``-`` in those columns of ``dvc
  metrics show`` means the gate decided without a test (no champion yet, a refused
  evaluation, or too little power for ``promote.max_mde``; the decision file's ``tested``).
  The tested flag and the pair and task counts stay in the decision file, to keep the table
  within 120 columns (measured: 118 with every key present).
- ``metrics/train.json``: ``version`` (the registered challenger), validation ``auc`` and
  ``mae`` of the best epoch.

Everything else stays where it was, as non-metric JSON: the evaluation record
``<evaluate.out_dir>/evaluation.json`` (and every per-method number flat in
``<evaluate.out_dir>/metrics.json``), the decision ``promote.out_file``, and the training's
``<train.out_dir>/metrics.json`` (every validation metric of the best epoch). Pure functions.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

ROLES = {"react": "react", "bon": "bon", "smc": "smc", "amc": "amc"}
"""Headline column -> the evaluation role whose largest-N row it reads."""
DETAIL = "metrics.json"
"""Name of the flat detail file in a stage's output folder (not a DVC metric)."""


def _num(x: Any, digits: int) -> float | None:
    return round(float(x), digits) if isinstance(x, (int, float)) and math.isfinite(x) else None


def eval_headline(ev: Mapping[str, Any], selection: bool) -> dict[str, float | int]:
    """``complete`` and each role's headline metric at its largest N (3 decimals)."""
    metric = "deployable_reward" if selection else "oracle_best"
    out: dict[str, float | int] = {"complete": int(ev.get("status") == "complete")}
    rows = list((ev.get("methods") or {}).values())
    for col, role in ROLES.items():
        mine = [m for m in rows if m.get("role") == role]
        if not mine:
            continue
        best = max(mine, key=lambda m: int(m.get("n") or 0))
        if (v := _num(best.get(metric), 3)) is not None:
            out[col] = v
    return out


def promotion_headline(d: Mapping[str, Any]) -> dict[str, float | int]:
    """``promoted`` and, when the gate tested, ``delta`` and ``p``."""
    out: dict[str, float | int] = {"promoted": int(bool(d.get("promote")))}
    if not d.get("tested"):  # an untested mean change is no evidence: it stays in the decision file
        return out
    for key, src, digits in (("delta", "delta", 3), ("p", "p_value", 4)):
        if (v := _num(d.get(src), digits)) is not None:
            out[key] = v
    return out


def train_headline(version: int | str, best: Mapping[str, Any]) -> dict[str, float | int]:
    """``version`` and the best epoch's validation ``auc`` and ``mae`` (3 decimals)."""
    out: dict[str, float | int] = {"version": int(version)}
    for key in ("auc", "mae"):
        if (v := _num(best.get(f"best_val_{key}"), 3)) is not None:
            out[key] = v
    return out
