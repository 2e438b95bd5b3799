"""The plain-text summary table of ``amc run`` and the pipeline commands (one row per method)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from amc.runner import LABELS, METRICS


def plus_minus(mean: float | None, se: float | None) -> str:
    """``mean ± s.e.``; ``n/a`` when not measured; the mean alone when there is no s.e."""
    if mean is None or math.isnan(mean):
        return "n/a"
    return f"{mean:.3f}" if se is None or math.isnan(se) else f"{mean:.3f} ± {se:.3f}"


def format_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """A plain-text table of :func:`summarise` rows."""
    head = ["method", "tasks", "failed", *LABELS, "tokens/task", "$/task"]
    body = [[r["method"], str(r["tasks"]), str(r.get("failed", 0)),
             *(plus_minus(r.get(k), r.get(k + "_se")) for k in METRICS),
             f"{r['tokens_per_task']:.0f}", f"{r['cost_per_task']:.4f}"] for r in rows]
    widths = [max(len(x) for x in col) for col in zip(head, *body, strict=True)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join([fmt.format(*head), fmt.format(*("-" * w for w in widths)),
                      *(fmt.format(*b) for b in body)])
