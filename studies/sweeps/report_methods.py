"""The evidence document's "Value methods" section: issue 30's declared candidates, measured.

One row per candidate of the declared protocol (``sweeps/protocol-issue30.yaml``), in its
order: the value variant (its value-stage overrides), the sweep setting, the offline figures
of its value on the held-out states (:mod:`amc.value.offline`, from
``evidence/values/<value id>.json``) and its validation AMC - Best-of-N with the 95% interval
and exact sign-flip p -- or "not run yet". A cell is a candidate's when it is a closed-channel
validation cell at the base point with the candidate's cell overrides, of the declared size,
and its value's recorded params carry the candidate's value overrides (the other overridden
keys at the value stage's defaults). The choice rule (:func:`studies.sweeps.protocol.choose`) is
applied to what has run and called provisional until every candidate has.

Which offline figure predicts the gain: for each sweep setting (the candidates' cell
overrides), the Spearman correlation across its run candidates' values of each figure (signed:
> 0 when the better figure goes with the larger gain) with the validation gain, with its exact
permutation p (:func:`amc.value.offline.spearman_exact`). A figure is *determined* when some
setting gives rho > 0 at p <= :data:`DETERMINED_P`; else the section says none is (the
promotion gate's offline guard then keeps its documented default figure,
:class:`amc.pipeline.promote_params.OfflineGuard`). The rollout ceiling's figures and gain at
the same settings are a reference row, not a point of the correlation.
"""

from __future__ import annotations

import math
from typing import Any

from amc.value.offline import FIGURES, HIGHER_IS_BETTER, spearman_exact
from studies.sweeps.config import LEGACY_CELL, CellParams, ValueParams
from studies.sweeps.protocol import Candidate, Protocol, choose, stem, value_overrides
from studies.sweeps.report import fmt_diff
from studies.sweeps.select import compare

LABELS = {"auc_within": "AUC within (task, step)", "log_loss": "log-loss",
          "small_p_ratio": "small-p ratio", "doomed_mean": "mean p of doomed states",
          "doomed_weight": "doomed / live weight"}
BASE_KEYS = ("benchmark", "depth", "q", "schedule", "every", "steps", "n", "slack", "sharpen",
             "beta", "budget", "menu_form", "val_sample")
"""The cell keys a candidate's cell must hold at the base point (CellParams defaults) or at
the candidate's override."""
Setting = tuple[tuple[str, Any], ...]
"""A sweep setting: a candidate's cell overrides as sorted (key, value) pairs."""
Table = dict[Setting, dict[str, tuple[float, float, int]]]
"""Setting -> figure -> (rho, exact p, n values)."""
DETERMINED_P = 0.05
"""A figure predicts the gain when some setting gives rho > 0 at an exact p at most this."""


def _norm(v: Any) -> Any:
    return tuple(v) if isinstance(v, list | tuple) else v


def _value_params(rec: dict[str, Any], values: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return values.get(str(rec.get("value_model_hash")), {}).get("params") or {}


def _cell_ok(rec: dict[str, Any], cell: dict[str, Any], protocol: Protocol, kind: str,
             split: str = "validation") -> bool:
    c, v = rec["cell"], protocol.validation
    base = CellParams().model_dump()
    want = {k: _norm(cell.get(k, base[k])) for k in BASE_KEYS}
    return (c.get("split") == split and c.get("value") == kind
            and all(_norm(c.get(k, LEGACY_CELL.get(k, base[k]))) == w for k, w in want.items())
            and c.get("val_tasks") == v.tasks and c.get("val_seed") == v.sample_seed
            and len(c.get("seeds") or ()) == v.seeds)


def is_candidate_cell(rec: dict[str, Any], cand: Candidate, protocol: Protocol,
                      values: dict[str, dict[str, Any]]) -> bool:
    """Whether the cell record ``rec`` is ``cand``'s validation cell (module docstring)."""
    if not _cell_ok(rec, cand.cell, protocol, "learned"):
        return False
    vp = _value_params(rec, values)
    if not vp:
        return False
    base = ValueParams().model_dump()
    return all(_norm(vp.get(k, base[k])) == _norm(v)
               for k, v in value_overrides(protocol, cand).items())


def candidate_cells(protocol: Protocol, runs: list[dict[str, Any]],
                    values: dict[str, dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Candidate name -> its matching validation cells (normally none or one)."""
    return {c.name: [r for r in runs if is_candidate_cell(r, c, protocol, values)]
            for c in protocol.candidates}


def final_choice(protocol: Protocol, runs: list[dict[str, Any]],
                 values: dict[str, dict[str, Any]]) -> Candidate | None:
    """The declared rule's choice once every candidate has exactly one validation cell."""
    cells = candidate_cells(protocol, runs, values)
    if any(len(v) != 1 for v in cells.values()):
        return None
    return choose(protocol, {k: v[0] for k, v in cells.items()})


def _setting(cand: Candidate) -> Setting:
    return tuple(sorted((k, _norm(v)) for k, v in cand.cell.items()))


def _words(d: dict[str, Any] | Setting, empty: str) -> str:
    items = sorted(dict(d).items())
    text = {True: "true", False: "false"}
    return ", ".join(f"{k} = {text[v] if isinstance(v, bool) else v}" for k, v in items
                     ) if items else empty


def _fig(off: dict[str, Any] | None, f: str) -> str:
    if not off or f not in off:
        return "–"
    x = float(off[f])
    return "∞" if math.isinf(x) else "–" if math.isnan(x) else f"{x:.3f}"


def _offline(rec: dict[str, Any], values: dict[str, dict[str, Any]], who: str
             ) -> dict[str, Any] | None:
    off = values.get(str(rec.get("value_model_hash")), {}).get("offline") or {}
    return off.get(who)


def _gain(rec: dict[str, Any], protocol: Protocol) -> float:
    p = compare(rec, protocol.choice.metric)
    if p is None:
        raise ValueError(f"{rec['name']}: no {protocol.choice.metric} in its rows")
    return p.d.mean


def _rows(protocol: Protocol, cells: dict[str, list[dict[str, Any]]],
          values: dict[str, dict[str, Any]]) -> list[str]:
    out = []
    for c in protocol.candidates:
        head = f"| {c.name} | {_words(c.value, 'base (loss = mse)')} | {_words(c.cell, '–')} "
        got = cells[c.name]
        if not got:
            out.append(head + "| – | " + " | ".join("–" for _ in FIGURES) + " | not run yet |")
            continue
        if len(got) > 1:
            names = ", ".join(f"`{r.get('experiment', r['name'])}`" for r in got)
            out.append(head + f"| – | {' | '.join('–' for _ in FIGURES)} | {len(got)} matching "
                       f"cells ({names}): resolve before choosing |")
            continue
        r = got[0]
        off = _offline(r, values, "learned")
        out.append(head + f"| `{r.get('value_model_hash')}` | "
                   + " | ".join(_fig(off, f) for f in FIGURES)
                   + f" | {fmt_diff(compare(r, protocol.choice.metric))} |")
    return out


def _ceiling_rows(protocol: Protocol, runs: list[dict[str, Any]],
                  cells: dict[str, list[dict[str, Any]]], values: dict[str, dict[str, Any]]
                  ) -> list[str]:
    """The rollout ceiling at each candidate setting (sharpen dropped: the ceiling has none),
    its figures from the run candidates' value records on the same held-out states."""
    out, seen = [], set()
    for c in protocol.candidates:
        cell = {k: v for k, v in c.cell.items() if k != "sharpen"}
        key = _setting(Candidate(name="-", cell=cell))
        if key in seen:
            continue
        seen.add(key)
        ceil = [r for r in runs if _cell_ok(r, cell, protocol, "rollout")]
        offs = {str(_offline(r, values, "ceiling")) for v in cells.values() for r in v
                if len(v) == 1 and _offline(r, values, "ceiling")}
        off = next((_offline(r, values, "ceiling") for v in cells.values() for r in v
                    if len(v) == 1 and _offline(r, values, "ceiling")), None)
        if not ceil and off is None:
            continue
        gain = fmt_diff(compare(ceil[0], protocol.choice.metric)) if len(ceil) == 1 else (
            "not run" if not ceil else f"{len(ceil)} cells")
        note = "" if len(offs) <= 1 else " (figures differ across values: first shown)"
        out.append(f"| rollout ceiling (reference){note} | – | {_words(key, '–')} | – | "
                   + " | ".join(_fig(off, f) for f in FIGURES) + f" | {gain} |")
    return out


def pick(protocol: Protocol, cells: dict[str, list[dict[str, Any]]]) -> str:
    """The choice rule's pick, in words (provisional on a partial list)."""
    single = {k: v[0] for k, v in cells.items() if len(v) == 1}
    clash = [k for k, v in cells.items() if len(v) > 1]
    k, n = len(single) + len(clash), len(protocol.candidates)
    if clash:
        return (f"**No choice**: {', '.join(clash)} have more than one matching validation cell "
                f"({k} of {n} run).")
    if not single:
        return f"**No choice yet**: 0 of {n} candidates run."
    ran = protocol.model_copy(update={"candidates": tuple(
        c for c in protocol.candidates if c.name in single)})
    chosen = choose(ran, single)
    g = _gain(single[chosen.name], protocol)
    rule = (f"highest mean AMC − Best-of-N ({protocol.choice.metric}), ties within "
            f"{protocol.choice.tie:g} to the earliest listed")
    if k < n:
        return (f"**Provisional pick: {chosen.name}** (mean {g:+.3f}; rule: {rule}) — only {k} of "
                f"{n} candidates have run, so this is not the protocol's choice: the choice "
                f"is made when all {n} have.")
    return f"**Choice: {chosen.name}** (mean {g:+.3f}; rule: {rule}; {k} of {n} run)."


def predictiveness_table(protocol: Protocol, cells: dict[str, list[dict[str, Any]]],
                         values: dict[str, dict[str, Any]]) -> Table:
    """Setting -> figure -> (rho, exact p, n values) over the setting's run candidates."""
    out: Table = {}
    for c in protocol.candidates:
        out.setdefault(_setting(c), {})
    for key in out:
        ran = [cells[c.name][0] for c in protocol.candidates
               if _setting(c) == key and len(cells[c.name]) == 1]
        for f in FIGURES:
            pts = [(float(off[f]), _gain(r, protocol)) for r in ran
                   if (off := _offline(r, values, "learned")) and f in off
                   and not math.isnan(float(off[f]))]
            sign = 1.0 if HIGHER_IS_BETTER[f] else -1.0
            rho, p = spearman_exact([sign * x for x, _ in pts], [g for _, g in pts])
            out[key][f] = (rho, p, len(pts))
    return out


def determined(table: Table) -> str | None:
    """The figure that predicts the gain (rho > 0, smallest exact p <= DETERMINED_P), or None."""
    hits = [(p, -rho, f) for row in table.values() for f, (rho, p, _) in row.items()
            if rho > 0 and p <= DETERMINED_P]
    return min(hits)[2] if hits else None


def _cellfmt(rho: float, p: float, n: int) -> str:
    if n < 3 or math.isnan(rho):
        return f"– (n = {n})"
    return f"{rho:+.2f} (n = {n}, p {p:.2g})"


def methods_section(protocol: Protocol | None, runs: list[dict[str, Any]],
                    values: dict[str, dict[str, Any]]) -> str:
    """The whole section (empty without a protocol)."""
    if protocol is None:
        return ""
    cells = candidate_cells(protocol, runs, values)
    k, n = sum(bool(v) for v in cells.values()), len(protocol.candidates)
    figs = " | ".join(LABELS[f] for f in FIGURES)
    title = ("" if protocol.label is None else
             f": {protocol.label.removeprefix(f'protocol-issue{protocol.issue}-')}")
    lines = [f"## Value methods (issue {protocol.issue}'s declared candidates{title})\n",
             f"The {n} candidates of `sweeps/{stem(protocol)}.yaml`, in its "
             f"order; **{k} of {n} run**. Each has one validation cell ({protocol.validation.tasks}"
             f" tasks × {protocol.validation.seeds} seeds); offline figures of its value on the "
             "value's held-out states (`evidence/values/<value id>.json`); gain = AMC − "
             f"Best-of-N, {protocol.choice.metric}, seeds averaged within a task, 95% interval "
             "over tasks, exact sign-flip p.\n",
             f"| candidate | variant (value-stage params) | setting (cell params) | value | {figs}"
             " | AMC − BoN [95% CI], p |",
             "|---|---|---|---|" + "---|" * len(FIGURES) + "---|",
             *_rows(protocol, cells, values), *_ceiling_rows(protocol, runs, cells, values), "",
             pick(protocol, cells), ""]
    return "\n".join(lines + _predict_lines(protocol, cells, values)) + "\n"


def _predict_lines(protocol: Protocol, cells: dict[str, list[dict[str, Any]]],
                   values: dict[str, dict[str, Any]]) -> list[str]:
    table = predictiveness_table(protocol, cells, values)
    keys = list(table)
    most = max((row[FIGURES[0]][2] for row in table.values()), default=0)
    lines = ["### Which offline figure predicts the gain\n",
             "Spearman ρ across the run candidates' values at one setting between each figure "
             "(signed: ρ > 0 when the better figure — higher AUC, lower log-loss, ratio or "
             "doomed score — goes with the larger gain) and the validation gain, with its exact "
             "permutation p (two-sided, unadjusted for the figures and settings compared). One "
             "column per setting: a value run at several settings is one point in each, not "
             "pooled (its gain depends on the setting too).\n",
             "| figure | " + " | ".join(_words(k, "base") for k in keys) + " |",
             "|---|" + "---|" * len(keys)]
    for f in FIGURES:
        lines.append(f"| {LABELS[f]} | "
                     + " | ".join(_cellfmt(*table[k][f]) for k in keys) + " |")
    best = determined(table)
    floor = 2 / math.factorial(most) if most >= 3 else 1.0
    lines.append("")
    if best is None:
        lines.append(f"**No figure is determined** (none reaches ρ > 0 at p ≤ {DETERMINED_P:g}):"
                     f" with at most {most} values per setting the smallest attainable exact p "
                     f"is {floor:.2g}, so these correlations say nothing yet about which figure "
                     "predicts steering; the promotion gate's offline guard keeps its documented "
                     "default figure (`amc.pipeline.promote_params.OfflineGuard`).")
    else:
        lines.append(f"**Determined: {LABELS[best]}** (ρ > 0 at p ≤ {DETERMINED_P:g}; at most "
                     f"{most} values per setting): the promotion gate's offline guard should "
                     f"use `figure: {best}`.")
    return lines
