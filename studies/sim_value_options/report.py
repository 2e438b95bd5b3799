"""The re-choice's result: ``evidence/sim-value-options/result.json`` and its generated ``.md``.

Per candidate: what it changes, its value's offline figures on the value's held-out tasks
(within-(task, step) AUC, pooled AUC, the fitted temperature when it has one) and its validation
cell (Best-of-4, AMC, the paired difference with its 95% t interval over tasks and the exact
sign-flip p, :func:`studies.confirm.analysis.compare`). Then the rule's choice and, when the
choice is not the reference, its test cells at each N beside the rollout ceiling and the
reference on the same (task, seed) pairs: the share of the ceiling (AMC - Best-of-N over the
ceiling's AMC - Best-of-N) and the chosen value's AMC minus the reference's, paired. The goal
sentence (>= 75% of the ceiling at N = 4) is generated from those figures. Every figure of the
markdown comes from the JSON (``--render`` re-renders; the test checks they agree).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from studies.confirm.analysis import compare
from studies.sweeps.config import SweepParams
from studies.sweeps.harvest import loads_quality, read_record
from studies.sweeps.protocol import Protocol

METRIC = "oracle_best"
GOAL_SHARE = 0.75
"""Issue 50's simulation goal: AMC - Best-of-N >= 75% of the ceiling's at N = 4."""


def rows(rec: dict[str, Any]) -> dict[tuple[str, int], tuple[float, float]]:
    """(task, seed) -> (Best-of-N, AMC) of a cell record's metric."""
    return {(r["task_id"], int(r["seed"])): (r["bon"]["metrics"][METRIC],
                                             r["amc"]["metrics"][METRIC]) for r in rec["rows"]}


def comparison(a: dict[tuple[str, int], float], b: dict[tuple[str, int], float]
               ) -> dict[str, Any]:
    """b - a over the pairs both have (seeds averaged within a task), as a plain dict."""
    keys = sorted(set(a) & set(b))
    c = compare([(t, s, a[(t, s)], b[(t, s)]) for t, s in keys])
    return {"a": c.a, "b": c.b, "diff": c.diff, "lo": c.lo, "hi": c.hi, "p": c.p,
            "exact": c.exact, "tasks": c.tasks, "pairs": c.pairs}


def gain(rec: dict[str, Any]) -> dict[str, Any]:
    """AMC - Best-of-N of one cell."""
    r = rows(rec)
    return comparison({k: v[0] for k, v in r.items()}, {k: v[1] for k, v in r.items()})


def value_figures(quality: dict[str, Any] | None) -> dict[str, Any]:
    """The value's offline figures on its held-out tasks (the value stage's quality record)."""
    if quality is None:
        return {}
    f = quality["final"]
    out = {"test_auc_within": f.get("test_auc_within"), "test_auc": f.get("test_auc"),
           "model_hash": quality["model_hash"]}
    if "resample_temperature" in f:
        out["resample_temperature"] = f["resample_temperature"]
    off = quality.get("offline") or {}
    for who in ("learned", "ceiling"):  # live and doomed states of the same held-out tasks
        if who in off:
            out[f"{who}_doomed_weight"] = off[who].get("doomed_weight")
            out[f"{who}_live_auc_within"] = off[who].get("auc_within")
    return out


def test_row(n: int, rec: dict[str, Any], ref: dict[str, Any], ceiling: dict[str, Any]
             ) -> dict[str, Any]:
    """One N: the chosen value's gain, the ceiling's and the reference's on the same pairs."""
    new, old, top = rows(rec), rows(ref), rows(ceiling)
    if any(new[k][0] != top[k][0] for k in new if k in top):
        raise ValueError(f"N = {n}: Best-of-N differs between the cell and its ceiling")
    g, c, r = gain(rec), gain(ceiling), gain(ref)
    return {"n": n, "gain": g, "ceiling": c, "reference": r,
            "share": g["diff"] / c["diff"], "reference_share": r["diff"] / c["diff"],
            "vs_reference": comparison({k: v[1] for k, v in old.items()},
                                       {k: v[1] for k, v in new.items()}),
            "value_model_hash": rec["value_model_hash"]}


def collect(protocol: Protocol, base: SweepParams) -> dict[str, Any]:
    """Everything the document shows, from the records on disk (run from ``sweeps/``)."""
    from studies.sim_value_options import run as R

    recs = R.validation_records(protocol, base)
    cands = []
    for c in protocol.candidates:
        q = (R.ROOT / "evidence/value_quality.json" if c.name == R.REFERENCE  # the kept value's
             else Path(R.value_params(base, c).quality_file))
        quality = loads_quality(q.read_text()) if q.is_file() else None
        cands.append({"name": c.name, "value": c.value, "cell": c.cell,
                      "offline": value_figures(quality),
                      "validation": gain(recs[c.name]) if c.name in recs else None})
    out: dict[str, Any] = {"protocol": str(R.PROTOCOL.relative_to(R.ROOT)),
                           "commit": commit(), "candidates": cands, "chosen": None, "test": []}
    if len(recs) < len(protocol.candidates):
        return out
    pick = R.chosen(protocol, base)
    out["chosen"] = pick.name
    for cell in R.test_cells(protocol, base):
        path = R.record_path(cell)
        if path.is_file():
            out["test"].append(test_row(cell.n, read_record(path),
                                        read_record(R.reference_test(cell.n)),
                                        read_record(R.ceiling_test(cell.n))))
    return out


def commit() -> str:
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, check=False).stdout.strip()


def _s(x: float) -> str:
    """Signed, 3 decimals, no negative zero (a difference of -1e-17 reads +0.000)."""
    return f"{round(x, 3) + 0.0:+.3f}"


def _ci(c: dict[str, Any]) -> str:
    return f"{_s(c['diff'])} [{_s(c['lo'])}, {_s(c['hi'])}], p {c['p']:.2g}"


def _what(c: dict[str, Any]) -> str:
    v, parts = c["value"], []
    kind = (v.get("objective") or {}).get("kind", "regression")
    parts.append(kind)
    if v.get("show_summary"):
        parts.append("+ summary")
    if c["cell"].get("value_map") == "fitted":
        parts.append("+ fitted T")
    return " ".join(parts)


def _num(x: Any, fmt: str = ".3f") -> str:
    return "" if x is None else format(x, fmt)


def render(res: dict[str, Any]) -> str:
    """The markdown of ``result.json`` (nothing typed by hand)."""
    lines = ["# The simulation's TextCraft value re-chosen with issue 50's value options", "",
             f"_Generated by `python -m studies.sim_value_options.run report` from "
             f"`evidence/sim-value-options/result.json` (commit {res['commit']}); declared in "
             f"`{res['protocol']}` before any of its cells ran._", "",
             "Validation: 116 random train tasks x 6 seeds, depth 2, planner-mix q 0.4, N = 4, "
             "beta 0.05, resampling every 2 steps; oracle best-of-pool, AMC - Best-of-4 paired "
             "by (task, seed), seeds averaged within a task, 95% t interval over tasks, exact "
             "sign-flip p. Offline: the value's own held-out tasks (15 of the value-training "
             "tasks), within-(task, step) AUC of success.", "",
             "Doomed weight: the mean score of a doomed held-out state (the planner's remaining "
             "steps exceed the steps left) over its live siblings' (0: a value that knows the "
             "state is lost; the rollout ceiling's is in the goal sentence).", "",
             "| candidate | what changes | held-out within AUC | held-out AUC | doomed weight "
             "| fitted T | Best-of-4 | AMC | AMC - Best-of-4 |",
             "|---|---|---|---|---|---|---|---|---|"]
    for c in res["candidates"]:
        o, v = c["offline"], c["validation"]
        lines.append(f"| {c['name']} | {_what(c)} | {_num(o.get('test_auc_within'))} | "
                     f"{_num(o.get('test_auc'))} | {_num(o.get('learned_doomed_weight'), '.2f')}"
                     f" | {_num(o.get('resample_temperature'), '.3g')}"
                     f" | {_num(v and v['a'])} | {_num(v and v['b'])} | "
                     f"{_ci(v) if v else 'not run'} |")
    lines.append("")
    if res["chosen"] is None:
        lines.append("The choice waits for every candidate's validation cell.")
        return "\n".join(lines) + "\n"
    lines.append(f"**Chosen by the declared rule:** `{res['chosen']}`.")
    lines.append("")
    if not res["test"]:
        lines.append("The reference is chosen or its test cells have not run: the issue-30 "
                     "test cells and shares stand.")
        return "\n".join(lines) + "\n"
    lines += ["Test: 54 depth-2 test tasks x seeds 0-5, each cell run once; the ceiling is the "
              "rollout value's committed cell on the same pairs, the reference the issue-30 "
              "winner's.", "",
              "| N | Best-of-N | AMC (chosen) | AMC - Best-of-N | ceiling gain | share of "
              "ceiling | reference gain | reference share | chosen - reference AMC |",
              "|---|---|---|---|---|---|---|---|---|"]
    for t in res["test"]:
        g = t["gain"]
        lines.append(f"| {t['n']} | {g['a']:.3f} | {g['b']:.3f} | {_ci(g)} | "
                     f"{t['ceiling']['diff']:+.3f} | {t['share']:.0%} | "
                     f"{t['reference']['diff']:+.3f} | {t['reference_share']:.0%} | "
                     f"{_ci(t['vs_reference'])} |")
    lines += ["", transfer_sentence(res), "", goal_sentence(res)]
    return "\n".join(lines) + "\n"


def transfer_sentence(res: dict[str, Any]) -> str:
    """How the validation gains carried to the test cells at N = 4 (the choice is the best
    of several validation cells, so its validation gain is read with that in mind)."""
    val = {c["name"]: c["validation"] for c in res["candidates"]}
    t4 = next((t for t in res["test"] if t["n"] == 4), None)
    ref = res["candidates"][0]["name"]
    if t4 is None or val.get(res["chosen"]) is None or val.get(ref) is None:
        return ""
    return (f"Validation to test at N = 4: the chosen `{res['chosen']}` "
            f"{_s(val[res['chosen']]['diff'])} -> {_s(t4['gain']['diff'])}, the reference "
            f"`{ref}` {_s(val[ref]['diff'])} -> {_s(t4['reference']['diff'])} (the chosen "
            f"is the best of {len(val)} validation cells, so its validation gain is "
            "optimistic; the test cells are not).")


def goal_sentence(res: dict[str, Any]) -> str:
    """Whether issue 50's simulation goal is met, in one generated sentence."""
    t4 = next((t for t in res["test"] if t["n"] == 4), None)
    if t4 is None:
        return "The N = 4 test cell has not run: the goal is not measured."
    met = t4["share"] >= GOAL_SHARE and t4["gain"]["lo"] > 0
    v = t4["vs_reference"]
    sep = "separable" if v["lo"] > 0 or v["hi"] < 0 else "not separable"
    text = (f"**Goal (>= {GOAL_SHARE:.0%} of the ceiling at N = 4): "
            f"{'met' if met else 'not met'}** -- the chosen value realises {t4['share']:.0%} "
            f"(the reference {t4['reference_share']:.0%}); its AMC minus the reference's is "
            f"{_ci(v)}, {sep} from zero.")
    o = next(c["offline"] for c in res["candidates"] if c["name"] == res["chosen"])
    if not met and o.get("ceiling_doomed_weight") is not None:
        text += (f" Measured on the value's held-out states: a doomed state keeps "
                 f"{o['learned_doomed_weight']:.2f} of its live siblings' mean score under the "
                 f"chosen value against {o['ceiling_doomed_weight']:.3f} under the rollout "
                 f"ceiling (within AUC {o['learned_live_auc_within']:.3f} against "
                 f"{o['ceiling_live_auc_within']:.3f}): the learned value leaves a lost "
                 "particle most of a live one's weight where the ceiling prunes it.")
    return text


def write(protocol: Protocol, base: SweepParams) -> dict[str, Any]:
    from studies.sim_value_options.run import OUT

    res = collect(protocol, base)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "result.json").write_text(json.dumps(res, indent=1, sort_keys=True) + "\n")
    (OUT / "result.md").write_text(render(res))
    print(OUT / "result.md")
    return res
