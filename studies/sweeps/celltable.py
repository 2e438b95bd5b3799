"""One row per cell of a fixed-budget benchmark (WebShop, SciWorld) for ``docs/evidence.md``:
the setting in words, paired AMC - Best-of-N with its interval and sign-flip p, and what the
cell cost -- prior calls per (task, seed) pair of each method and wall seconds per pair (both
methods together: a record keeps its cell's wall time, not each pair's).
"""

from __future__ import annotations

from typing import Any

from studies.sweeps.config import recorded_cell
from studies.sweeps.report import describe, fmt_diff
from studies.sweeps.select import VALUE_LABEL, compare
from studies.sweeps.signflip import SignFlip, paired_sign_flip


def bench_of(rec: dict[str, Any]) -> str:
    return str(rec["cell"].get("benchmark", "textcraft"))


def sign_flip(rec: dict[str, Any], metric: str = "oracle_best") -> SignFlip:
    """The sign-flip test of AMC - BoN on a metric over the record's tasks."""
    rows = rec["rows"]
    return paired_sign_flip([x["task_id"] for x in rows],
                            [x["bon"]["metrics"][metric] for x in rows],
                            [x["amc"]["metrics"][metric] for x in rows])


def p_value(rec: dict[str, Any], metric: str = "oracle_best") -> str:
    """The sign-flip p of AMC - BoN on a metric, labelled exact or Monte Carlo."""
    return str(sign_flip(rec, metric))


def setting(cell: dict[str, Any]) -> str:
    """A cell's setting in words (fixed-budget benchmarks: the budget, not plan + slack)."""
    if bench_of({"cell": cell}) == "textcraft":
        return describe(cell)
    buy = (" (rollouts end with the forced buy)" if cell["value"] == "rollout"
           and bench_of({"cell": cell}) == "webshop" and recorded_cell(cell).rollout_final
           else "")
    return (f"q = {cell['q']:g}, β = {cell['beta']:g}, every {cell['every']}, N = {cell['n']}, "
            f"budget {cell['budget']}, value = {VALUE_LABEL[cell['value']]}{buy}")


def cost(rec: dict[str, Any]) -> str:
    """``BoN / AMC`` prior calls per pair, then wall seconds per pair (– when unrecorded)."""
    rows = rec["rows"]
    bon, amc = (sum(x[m]["calls"] for x in rows) / len(rows) for m in ("bon", "amc"))
    wall = rec.get("wall_s")
    return f"{bon:.0f} / {amc:.0f} | " + (f"{wall / len(rows):.0f}" if wall else "–")


def cell_table(recs: list[dict[str, Any]], chosen: set[int], mark: Any = None,
               success: bool = False) -> list[str]:
    """The table's lines: ✓ marks a record whose ``id`` is in ``chosen``; ``mark(rec)`` adds a
    note after the split; ``success`` adds AMC - BoN on success (a graded score's benchmark)."""
    head = ("| split | setting | pairs (tasks) | Best-of-N | AMC | AMC − BoN [95% CI] | "
            "sign-flip p |" + (" success AMC − BoN |" if success else "")
            + " prior calls per pair BoN / AMC | wall s per pair |")
    out = [head, "|" + "---|" * head.count(" |")]
    for r in recs:
        p = compare(r)
        if p is None:
            continue
        note = (mark(r) if mark else "") + (" ✓" if id(r) in chosen else "")
        out.append(f"| {r['cell']['split']}{note} | {setting(r['cell'])} | {p.d.pairs} "
                   f"({p.d.tasks}) | {p.a:.3f} | {p.b:.3f} | {fmt_diff(p)} | {p_value(r)} | "
                   + (f"{fmt_diff(compare(r, 'success'))} | " if success else "")
                   + f"{cost(r)} |")
    return out
