"""The evidence document's section for cells run after issue 30 closed the side channels.

Cells with ``menu_form`` (planner-mix acting in the menu's own form; the value shown no budget
derived from the plan; validation a seeded random sample of train tasks) are a different
regime from every cell before them, so they are set apart (:func:`split_closed`) and listed in
their own table, the learned ones with their value's offline figures on held-out states
(:mod:`amc.value.offline`, from ``evidence/values/<hash>.json``) beside the gain.
"""

from __future__ import annotations

from typing import Any

from studies.sweeps.report import describe, fmt_diff
from studies.sweeps.report_values import describe_value
from studies.sweeps.select import compare, deployable

FIGS = (("auc_within", "AUC within (task, step)"), ("log_loss", "log-loss"),
        ("doomed_mean", "mean p of doomed states"), ("doomed_weight", "doomed / live weight"))


def split_closed(runs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(cells before issue 30's side-channel change, cells after it)."""
    after = [r for r in runs if r["cell"].get("menu_form")]
    return [r for r in runs if not r["cell"].get("menu_form")], after


def variant(rec: dict[str, Any], values: dict[str, dict[str, Any]]) -> str:
    """The learned value's variant in words, from its recorded value-stage params (the cell
    name does not say it: issue 30's candidates share cell settings)."""
    vp = values.get(str(rec.get("value_model_hash")), {}).get("params")
    if rec["cell"]["value"] != "learned" or not vp:
        return ""
    return describe_value(vp)


def _figures(rec: dict[str, Any], values: dict[str, dict[str, Any]]) -> str:
    if rec["cell"]["value"] != "learned":
        return "–"
    off = values.get(str(rec.get("value_model_hash")), {}).get("offline", {}).get("learned")
    if not off:
        return "not recorded"
    return ", ".join(f"{off[k]:.3f}" if k in off else "–" for k, _ in FIGS)


def closed_section(after: list[dict[str, Any]], values: dict[str, dict[str, Any]]) -> str:
    """Every cell run with the side channels closed (none dropped)."""
    if not after:
        return ""
    lines = ["## After closing the side channels (issue 30)\n",
             "Cells run with planner-mix acting in the menu's own form, the learned value shown "
             "no budget derived from the optimal plan, and validation a seeded random sample of "
             "train tasks (`sweeps/protocol-issue30.yaml`). A different regime from the cells "
             "above (budgets are menu-form plans), so they are not mixed into their tables. "
             "Offline figures of the cell's learned value on its held-out states: "
             + ", ".join(label for _, label in FIGS) + ".\n",
             "| split | setting | pairs (tasks) | Best-of-N | AMC | AMC − BoN, oracle [95% CI] | "
             "deployable selection | value's offline figures |",
             "|---|---|---|---|---|---|---|---|"]
    for r in sorted(after, key=lambda r: (r["cell"]["split"] != "validation", r["name"])):
        p, dep = compare(r), deployable(r)
        if p is None:
            raise ValueError(f"{r['name']}: rows without the oracle metric")
        v = variant(r, values)
        lines.append(f"| {r['cell']['split']} | {describe(r['cell'])}{f' ({v})' if v else ''} "
                     f"| {p.d.pairs} "
                     f"({p.d.tasks}) | {p.a:.3f} | {p.b:.3f} | {fmt_diff(p)} | "
                     f"{fmt_diff(dep[1]) if dep else '–'} | {_figures(r, values)} |")
    return "\n".join(lines) + "\n"
