"""Value quality per round on one fixed held-out set, and the rounds' figure.

A rounds study scores every round's value on the same states (every prefix of the declared
test set's kept Best-of-N prior rollouts, which no round trains on) and writes
``heldout-values.json`` beside the ledgers. The ledger's validation metrics come from each
round's own split, which grows with the dataset; only these compare across rounds. This module
renders them: a table (AUC, within-(task, step) AUC in total and at each resampling step,
Pearson, MAE) and the figure of the gain and the held-out quality per round. It reads JSON
only (the reports never import the pipeline).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from amc.plots import pyplot, save_png

HELDOUT_FILE = "heldout-values.json"
"""The file of every round's held-out value quality, in the rounds' kept folder."""


def load_heldout(src: Path) -> dict[str, Any] | None:
    """The held-out scores of a rounds folder (None when not computed)."""
    f = src / HELDOUT_FILE
    return json.loads(f.read_text()) if f.is_file() else None


def by_round(heldout: Mapping[str, Any] | None, entries: Sequence[Mapping[str, Any]]
             ) -> dict[int, Mapping[str, Any]]:
    """Round -> its held-out measures, only where they scored the version its ledger trained
    (a retrained round with another version is not shown the old version's numbers)."""
    out: dict[int, Mapping[str, Any]] = {}
    scored = {int(x["round"]): x for x in (heldout or {}).get("rounds", [])}
    for e in entries:
        r = int(e["ledger"]["round"])
        tr = ((e["ledger"].get("steps") or {}).get("train")) or {}
        if r in scored and tr.get("version") is not None and \
                scored[r].get("value") == f"models:/{tr.get('model')}/{tr['version']}":
            out[r] = scored[r]
    return out


def _f(x: Any) -> str:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return "n/a"
    return "n/a" if not math.isfinite(v) else f"{v:.3f}"


def attach_heldout(src: Path, entries: Sequence[dict[str, Any]]) -> None:
    """Each entry whose round was scored gets ``heldout``: its measures and, under ``set``,
    what the held-out set is (so a resolved copy of the entries renders alone)."""
    doc = load_heldout(src)
    meta = {k: v for k, v in (doc or {}).items() if k != "rounds"}
    for r, x in by_round(doc, entries).items():
        for e in entries:
            if int(e["ledger"]["round"]) == r:
                e["heldout"] = {**x, "set": meta}


def heldout_lines(entries: Sequence[Mapping[str, Any]]) -> list[str]:
    """The held-out table with its one-line description (empty when not computed)."""
    scored = [e["heldout"] for e in entries if e.get("heldout")]
    if not scored:
        return []
    m = scored[0]["set"]
    steps = [int(t) for t in m.get("resample_steps") or []]
    head = ["round", "value", "AUC", "AUC within (task, step)",
            *[f"within, step {t}" for t in steps], "Pearson", "MAE"]
    out = [f"Each round's value on one fixed held-out set: the {m['states']} prefix states of "
           f"{m['rollouts']} prior rollouts of the declared set's {m['tasks']} tasks "
           f"(`{m['source']}`, success rate {_f(m.get('success_rate'))}), which no round trains "
           "on; the validation columns above come from each round's own, growing split and do "
           "not compare across rounds. \"Within\" pairs only states of one task at one step, "
           "as resampling does; at the resampling steps is where the value steers.", "",
           "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for x in scored:
        ver = str(x["value"]).rsplit("/", 1)[-1]
        out.append("| " + " | ".join([
            str(x["round"]), f"v{ver}", _f(x.get("auc")), _f(x.get("auc_within")),
            *[_f(x.get(f"auc_within_step{t}")) for t in steps],
            _f(x.get("pearson")), _f(x.get("mae"))]) + " |")
    return out


def rounds_plot(rows: Sequence[Mapping[str, Any]], entries: Sequence[Mapping[str, Any]],
                out: str | Path, n: int = 4) -> Path:
    """Gain with its 95% interval (left axis) and value quality per round (right): the held-out
    AUC and within-(task, step) AUC where scored, else the validation AUC / Pearson."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    xs = [r["round"] for r in rows]
    ev = [r for r in rows if not math.isnan(r["gain"])]
    if ev:
        lo = [r["gain"] - r["lo"] if not math.isnan(r["lo"]) else 0.0 for r in ev]
        hi = [r["hi"] - r["gain"] if not math.isnan(r["hi"]) else 0.0 for r in ev]
        ax.errorbar([r["round"] for r in ev], [r["gain"] for r in ev], yerr=[lo, hi],
                    fmt="o-", color="C0", capsize=4, label=f"AMC − Best-of-{n} (95% t)")
    ax.axhline(0.0, color="grey", lw=0.8, ls=":")
    ax.set(xlabel="round", ylabel=f"AMC − Best-of-{n}, declared test set")
    ax.set_xticks(xs)
    q = ax.twinx()
    heldout = {int(e["ledger"]["round"]): e["heldout"] for e in entries if e.get("heldout")}
    if heldout:
        hx = sorted(heldout)
        for key, color, label in (("auc", "C1", "held-out AUC"),
                                  ("auc_within", "C2", "held-out AUC within (task, step)")):
            q.plot(hx, [float(heldout[r].get(key, math.nan)) for r in hx], "s--",
                   color=color, label=label)
        q.set_ylabel("value quality (fixed held-out set)")
    else:
        for key, color, label in (("auc", "C1", "val AUC"), ("pearson", "C2", "val Pearson")):
            q.plot(xs, [r[key] for r in rows], "s--", color=color, label=label)
        q.set_ylabel("value quality (validation)")
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = q.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, fontsize=8, loc="upper center", ncol=2,
              bbox_to_anchor=(0.5, -0.16))  # below the axes: never over a point
    ax.set_title("Rounds: gain on the declared set and value quality")
    return save_png(fig, out)
