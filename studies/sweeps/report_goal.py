"""Issue 30's goal on its declared test cells: the chosen learned value against the rollout ceiling.

The protocol (``sweeps/protocol-issue30.yaml``) names the test settings (N = 4, 8, 15 at the
chosen candidate's cell overrides); for each, the chosen candidate's learned-value test cell
and the rollout ceiling's twin (same cell, no exponent) run once on the same (task, seed)
pairs. The goal (:data:`GOAL`): at the base point (the first test setting) AMC - Best-of-N
with the learned value reaches at least ``share`` of the ceiling's gain on the same pairs and
``base_abs`` absolute, with its interval above 0 and exact sign-flip p below 0.05; at every
other setting at least ``other_abs`` with the same two checks. The section states, from the
records only, which checks pass, and one ``**Value goal:**`` sentence the README repeats.
"""

from __future__ import annotations

from typing import Any

from studies.sweeps.config import CellParams, ValueParams
from studies.sweeps.protocol import Candidate, Protocol
from studies.sweeps.report import fmt_diff
from studies.sweeps.report_methods import _cell_ok, _norm, _value_params, final_choice
from studies.sweeps.select import compare
from studies.sweeps.signflip import SignFlip, paired_sign_flip

GOAL = {"share": 0.75, "base_abs": 0.15, "other_abs": 0.10, "p": 0.05}
"""Issue 30's goal: share of the ceiling and absolute gain at the base point, absolute gain
elsewhere, and the exact p a gain must reach (besides an interval above 0)."""


def test_records(protocol: Protocol, chosen: Candidate, runs: list[dict[str, Any]],
                 values: dict[str, dict[str, Any]]
                 ) -> list[tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]]:
    """Per declared test setting: (its cell overrides, learned records, ceiling records)."""
    vbase = ValueParams().model_dump()
    keys = {k for c in protocol.candidates for k in c.value}

    def mine(rec: dict[str, Any]) -> bool:
        vp = _value_params(rec, values)
        return bool(vp) and all(_norm(vp.get(k, vbase[k])) == _norm(chosen.value.get(k, vbase[k]))
                                for k in keys)

    out = []
    for t in protocol.test:
        cell = {**chosen.cell, **t}
        roll = {k: v for k, v in cell.items() if k != "sharpen"}
        out.append((cell, [r for r in runs if _cell_ok(r, cell, protocol, "learned", "test")
                           and mine(r)],
                    [r for r in runs if _cell_ok(r, roll, protocol, "rollout", "test")]))
    return out


def _pairs(rec: dict[str, Any]) -> set[tuple[str, int]]:
    return {(str(x["task_id"]), int(x["seed"])) for x in rec["rows"]}


def _sign_flip(rec: dict[str, Any], metric: str) -> SignFlip:
    rows = rec["rows"]
    return paired_sign_flip([x["task_id"] for x in rows],
                            [x["bon"]["metrics"][metric] for x in rows],
                            [x["amc"]["metrics"][metric] for x in rows])


def verdict(protocol: Protocol, chosen: Candidate, runs: list[dict[str, Any]],
            values: dict[str, dict[str, Any]]) -> tuple[list[str], str]:
    """(table lines, the one-sentence result) of the chosen candidate's test cells."""
    metric, lines, parts, misses = protocol.choice.metric, [], [], []
    done, base = 0, None  # base: the learned record at the base point (the first setting)
    for i, (cell, learned, ceil) in enumerate(test_records(protocol, chosen, runs, values)):
        n = cell.get("n", CellParams().n)
        if len(learned) != 1 or len(ceil) != 1:
            state = "not run yet" if not learned and not ceil else (
                f"{len(learned)} learned / {len(ceil)} ceiling cells match")
            lines.append(f"| N = {n} | {state} | – | – | – |")
            continue
        done += 1
        base = learned[0] if i == 0 else base
        a, c = compare(learned[0], metric), compare(ceil[0], metric)
        if a is None or c is None:
            raise ValueError(f"N = {n}: no {metric} in the test records")
        same = _pairs(learned[0]) == _pairs(ceil[0])
        share = a.d.mean / c.d.mean if c.d.mean > 0 else float("nan")
        sf = _sign_flip(learned[0], metric)
        p = sf.p
        need = GOAL["base_abs"] if i == 0 else GOAL["other_abs"]
        ok = a.d.lo > 0 and p < GOAL["p"] and a.d.mean >= need and (
            i > 0 or share >= GOAL["share"])
        lines.append(f"| N = {n} | {fmt_diff(a)}, sign-flip p {sf} | {fmt_diff(c)} | "
                     f"{share:.0%}{'' if same else ' (pairs differ)'} | "
                     f"{'met' if ok else 'missed'} |")
        parts.append(f"N = {n}: {a.d.mean:+.3f} [{a.d.lo:+.3f}, {a.d.hi:+.3f}], sign-flip p "
                     f"{sf}, against the ceiling's {c.d.mean:+.3f} ({share:.0%})")
        if not ok:
            misses.append(f"N = {n}")
    total = len(protocol.test)
    if done < total:
        return lines, (f"issue 30's declared test cells of `{chosen.name}`: {done} of {total} "
                       "settings run; the goal is not decided yet"
                       + (f" ({'; '.join(parts)})." if parts else "."))
    result = "**met**" if not misses else f"**missed** at {', '.join(misses)}"
    why = gap(values.get(str(base.get("value_model_hash")), {})) if misses and base else ""
    return lines, (f"with the value chosen on validation by the declared protocol "
                   f"(`{chosen.name}`), AMC − Best-of-N on test ({metric}) is "
                   f"{'; '.join(parts)}: the goal (≥ {GOAL['share']:.0%} of the ceiling and "
                   f"≥ +{GOAL['base_abs']:.2f} at N = {protocol.test[0].get('n')}, ≥ "
                   f"+{GOAL['other_abs']:.2f} elsewhere, interval above 0 and sign-flip p < "
                   f"{GOAL['p']:g}) is {result}{why}.")


def gap(value: dict[str, Any]) -> str:
    """The measured difference between the chosen value and the ceiling on the value's
    held-out states (its record's offline figures): ranking within a (task, step) and the
    weight a doomed particle keeps beside a live one (empty without both figures)."""
    fig = value.get("offline") or {}
    a, c = fig.get("learned") or {}, fig.get("ceiling") or {}
    keys = ("auc_within", "doomed_weight")
    if not all(isinstance(f.get(k), (int, float)) for f in (a, c) for k in keys):
        return ""
    return ("; measured on the value's held-out states, the learned value ranks states of one "
            f"(task, step) with AUC {a['auc_within']:.3f} against the ceiling's "
            f"{c['auc_within']:.3f}, and a doomed state keeps {a['doomed_weight']:.2f} of a live "
            f"state's weight against the ceiling's {c['doomed_weight']:.3f}: doomed particles "
            "survive resampling")


def value_goal_section(protocol: Protocol | None, runs: list[dict[str, Any]],
                       values: dict[str, dict[str, Any]]) -> str:
    """The subsection (empty without a protocol; a line when the choice is not made yet)."""
    if protocol is None:
        return ""
    chosen = final_choice(protocol, runs, values)
    if chosen is None:
        return ("**Value goal:** issue 30's choice is not made yet (not every candidate has "
                "exactly one validation cell), so none of its test cells is reported.\n")
    lines, sentence = verdict(protocol, chosen, runs, values)
    return "\n".join([
        "### The chosen value on test (each declared cell once)\n",
        "AMC − Best-of-N with the chosen learned value and with the rollout ceiling (same "
        "cell, no exponent) on the same test pairs; share = learned / ceiling.\n",
        "| setting | learned V_θ [95% CI] | rollout ceiling [95% CI] | share | goal |",
        "|---|---|---|---|---|", *lines, "", f"**Value goal:** {sentence}"]) + "\n"
