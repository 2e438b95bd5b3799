"""Plots of the evidence document: gain vs one factor per value kind, gain vs sharpening.

PNG files without a timestamp in their metadata (regenerating them changes nothing when the
results did not change; :mod:`amc.plots`). The value-quality curve is the value package's
own plot (:func:`amc.value.scale.plot_quality`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from amc.plots import pyplot, save_png
from studies.sweeps.config import recorded_cell
from studies.sweeps.select import VALUE_LABEL, VALUES, compare, factor_value, sharpen


def plot_factor(recs: list[dict[str, Any]], factor: str, out: Path) -> Path:
    """AMC - Best-of-N (oracle best-of-pool, 95% interval) against one factor, per value."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    labels = sorted({str(factor_value(r["cell"], factor)) for r in recs},
                    key=lambda s: s.zfill(8))
    for k, value in enumerate(VALUES):
        pts = [(labels.index(str(factor_value(r["cell"], factor))), c)
               for r in recs if r["cell"]["value"] == value and (c := compare(r)) is not None]
        if not pts:
            continue
        x = [i + (k - 1) * 0.08 for i, _ in pts]
        err = [[p.d.mean - p.d.lo for _, p in pts], [p.d.hi - p.d.mean for _, p in pts]]
        ax.errorbar(x, [p.d.mean for _, p in pts], yerr=err,
                    marker="o", capsize=3, label=VALUE_LABEL[value])
    ax.axhline(0, color="grey", lw=0.8)
    ax.axhline(0.10, color="grey", lw=0.8, ls=":")
    ax.set_xticks(range(len(labels)), labels)
    ax.set_xlabel(factor)
    ax.set_ylabel("AMC − Best-of-N (oracle)")
    return _save(fig, ax, out)


def plot_sharpen(recs: list[dict[str, Any]], out: Path) -> Path:
    """AMC - Best-of-N (oracle, 95% interval) against the learned value's exponent k, one line
    per (split, N, beta); log-2 x axis (k = 1, 2, 4, ...)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    groups = sorted({(r["cell"]["split"], r["cell"]["n"], r["cell"]["beta"]) for r in recs})
    for j, (split, n, beta) in enumerate(groups):
        pts = sorted((sharpen(r["cell"]), c) for r in recs
                     if (r["cell"]["split"], r["cell"]["n"], r["cell"]["beta"]) == (split, n, beta)
                     and (c := compare(r)) is not None)
        x = [k * 1.03 ** (j - len(groups) / 2) for k, _ in pts]  # small offsets: bars apart
        err = [[p.d.mean - p.d.lo for _, p in pts], [p.d.hi - p.d.mean for _, p in pts]]
        ax.errorbar(x, [p.d.mean for _, p in pts], yerr=err, marker="o", capsize=3,
                    ls="-" if split == "test" else "--", label=f"{split}, N = {n}, β = {beta:g}")
    ax.axhline(0, color="grey", lw=0.8)
    ax.axhline(0.10, color="grey", lw=0.8, ls=":")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("exponent k of the learned value (p → p^k)")
    ax.set_ylabel("AMC − Best-of-N (oracle)")
    return _save(fig, ax, out)


def _bench_value(cell: dict[str, Any]) -> str:
    """A fixed-budget cell's value as the plot labels it (WebShop's rollouts: with the buy?)."""
    if cell["value"] != "rollout":
        return VALUE_LABEL.get(str(cell["value"]), str(cell["value"]))
    buy = recorded_cell(cell).rollout_final and cell.get("benchmark") == "webshop"
    return "rollout + buy" if buy else "rollout"  # the forced buy is WebShop's


def plot_bench_beta(recs: list[dict[str, Any]], bench: str, out: Path) -> Path:
    """A fixed-budget benchmark's AMC - Best-of-N (oracle score, 95% interval) against beta:
    one dashed line per validation (value, q, N), each test cell a filled marker of the same
    colour (the cells the choice rule sent to test, and declared ceilings without validation).
    Cells without a value (beta cannot act before the end) are left out."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4))
    cells = [r for r in recs if r["cell"]["value"] != "none"]
    betas = sorted({float(r["cell"]["beta"]) for r in cells})
    groups = sorted({(_bench_value(r["cell"]), r["cell"]["q"], r["cell"]["n"]) for r in cells})
    for j, (value, q, n) in enumerate(groups):
        for split, ls, mk in (("validation", "--", "o"), ("test", "", "s")):
            pts = sorted(((betas.index(float(r["cell"]["beta"])), c) for r in cells
                          if (_bench_value(r["cell"]), r["cell"]["q"], r["cell"]["n"])
                          == (value, q, n) and r["cell"]["split"] == split
                          and (c := compare(r)) is not None), key=lambda t: t[0])
            if not pts:
                continue
            x = [i + (j - len(groups) / 2) * 0.05 for i, _ in pts]
            err = [[p.d.mean - p.d.lo for _, p in pts], [p.d.hi - p.d.mean for _, p in pts]]
            ax.errorbar(x, [p.d.mean for _, p in pts], yerr=err, marker=mk, capsize=3, ls=ls,
                        color=f"C{j % 10}", label=f"{split}, {value}, q = {q:g}, N = {n}")
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xticks(range(len(betas)), [f"{b:g}" for b in betas])
    ax.set_xlabel("β")
    ax.set_ylabel("AMC − Best-of-N (oracle score)")
    ax.set_title(f"{bench}: per value and (q, N)")
    ax.legend(fontsize=6, ncol=2, loc="lower left")  # the low-beta corner below 0 is empty
    return save_png(fig, out)


def plot_bench_q(recs: list[dict[str, Any]], bench: str, out: Path) -> Path:
    """A fixed-budget benchmark's test cells against the prior's skill q: AMC - Best-of-N
    (oracle score, 95% interval) per (value, N) (left), and Best-of-N's own score per N
    (right: where it is near 1, no method can gain). One point per test cell."""
    plt = pyplot()
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(8.4, 3.6))
    cells = [(r, c) for r in recs if r["cell"]["split"] == "test"
             and (c := compare(r)) is not None]
    series = sorted({(_bench_value(r["cell"]), int(r["cell"]["n"])) for r, _ in cells})
    for j, (value, n) in enumerate(series):
        pts = sorted(((float(r["cell"]["q"]), c) for r, c in cells
                      if (_bench_value(r["cell"]), int(r["cell"]["n"])) == (value, n)),
                     key=lambda t: t[0])
        x = [q + (j - len(series) / 2) * 0.01 for q, _ in pts]
        err = [[c.d.mean - c.d.lo for _, c in pts], [c.d.hi - c.d.mean for _, c in pts]]
        ax.errorbar(x, [c.d.mean for _, c in pts], yerr=err, marker="s" if n <= 4 else "^",
                    capsize=3, ls="", color=f"C{j % 10}", label=f"{value}, N = {n}")
    for n in sorted({int(r["cell"]["n"]) for r, _ in cells}):
        at = [(float(r["cell"]["q"]), c.a) for r, c in cells if int(r["cell"]["n"]) == n]
        qs = sorted({q for q, _ in at})
        mean = [sum(a for q2, a in at if q2 == q) / sum(q2 == q for q2, _ in at) for q in qs]
        bx.plot(qs, mean, "o-", label=f"N = {n}")
    bx.set_ylim(0, 1.05)
    bx.set_xlabel("planner-mix skill q")
    bx.set_ylabel("Best-of-N oracle score (test)")
    bx.legend(fontsize=7)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xlabel("planner-mix skill q")
    ax.set_ylabel("AMC − Best-of-N (oracle score)")
    ax.set_title(f"{bench}: test cells per value and N")
    ax.legend(fontsize=7)
    return save_png(fig, out)


def _save(fig: Any, ax: Any, out: Path) -> Path:
    """Legend, then a reproducible PNG at ``out`` (:func:`amc.plots.save_png`)."""
    ax.legend(fontsize=8)
    return save_png(fig, out)
