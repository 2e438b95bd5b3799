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


SPARE = ("weighted mean", "max weight (uses R)")
"""Diagnostic columns a narrow table leaves out first (they stay in ``summary.json``)."""


def format_table(rows: Sequence[Mapping[str, Any]], width: int | None = None) -> str:
    """A plain-text table of :func:`summarise` rows.

    With ``width`` (e.g. the terminal's), a wider table leaves out, in this order, columns
    that say nothing (``n/a`` or zero in every row), then the :data:`SPARE` diagnostics, until
    it fits; a line names what it left out. A row's ``warnings`` (a value constant within
    its groups, :mod:`amc.smc.value_spread`) follow, one line each.
    """
    head = ["method", "tasks", "failed", *LABELS, "tokens/task", "$/task"]
    body = [[r["method"], str(r["tasks"]), str(r.get("failed", 0)),
             *(plus_minus(r.get(k), r.get(k + "_se")) for k in METRICS),
             f"{r['tokens_per_task']:.0f}", f"{r['cost_per_task']:.4f}"] for r in rows]
    cols = [list(c) for c in zip(head, *body, strict=True)]
    hidden: list[str] = []
    empty = [c[0] for c in cols if body and all(x in ("n/a", "0", "0.0000") for x in c[1:])]
    for name in (*empty, *SPARE):
        if width is None or _width(cols) <= width:
            break
        cols = [c for c in cols if c[0] != name]
        hidden.append(name)
    widths = [max(len(x) for x in col) for col in cols]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = [fmt.format(*(c[i] for c in cols)) for i in range(len(rows) + 1)]
    lines.insert(1, fmt.format(*("-" * w for w in widths)))
    if hidden:
        lines.append(f"(hidden at {width} columns: {', '.join(hidden)}; all in summary.json)")
    lines += [f"warning: {w}" for r in rows for w in r.get("warnings") or ()]
    return "\n".join(lines)


def _width(cols: Sequence[Sequence[str]]) -> int:
    return sum(max(len(x) for x in c) for c in cols) + 2 * (len(cols) - 1)
