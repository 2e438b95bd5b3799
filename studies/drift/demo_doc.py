"""The drift demo's section of docs/pipeline.md, generated from the committed measurements.

Reads ``evidence/drift/demo.json`` (the demo's ``drift_demo.json``: its checks, decisions, the
fall and recovery across checks) and the measured candidate changes of each declared search
(:data:`SEARCHES`: ``evidence/drift/candidates-<set>.json``, those committed) and replaces
the block between ``<!-- drift-demo -->`` and ``<!-- /drift-demo -->`` of
``docs/pipeline.md``; ``--check`` exits 1 when the document is stale.
``python -m studies.drift.demo_doc [--check]``.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "pipeline.md"
DEMO = ROOT / "evidence" / "drift" / "demo.json"
POINT_RULE = ROOT / "evidence" / "drift" / "demo-point-rule.json"
"""The demo's first run, kept: the monitor then flagged on point thresholds alone."""
POINT_HEAD = ("The first run, kept (`evidence/drift/demo-point-rule.json`, plot "
              "`docs/evidence/drift_demo_point_rule.png`), ran before `drift.level`: the "
              "monitor then flagged any worsening past a threshold, noise or not; its check 0 "
              "is why the monitor now weighs each worsening against its standard error:")
SEARCHES = ("subtask", "feedback")
"""The declared searches (``studies/drift/<set>.py``), in the order they were declared."""
BEGIN, END = "<!-- drift-demo -->", "<!-- /drift-demo -->"


def ci(x: dict[str, Any] | None) -> str:
    """``+m [lo, hi], p p`` of a paired difference (``n/a`` when not measured)."""
    if not x:
        return "n/a"
    return f"{x['mean']:+.3f} [{x['lo']:+.3f}, {x['hi']:+.3f}], sign-flip p {x['p']:.2g}"


def skills(opts: dict[str, Any]) -> str:
    """A prior's options in words: its skill map, else its skill q; and its reaction to
    feedback (``after``)."""
    words = (", ".join(f"{k} {v:g}" for k, v in sorted(opts["skills"].items()))
             if opts.get("skills") else f"q {opts.get('q', 0.5):g}")
    return words + "".join(f", after '{k}' {v:g}" for k, v in opts.get("after", {}).items())


def overrides(r: dict[str, Any]) -> str:
    """A regime's overrides of the demo's params in words (empty when none)."""
    def flat(d: dict[str, Any], pre: str = "") -> list[str]:
        return [x for k, v in d.items() for x in (
            flat(v, f"{pre}{k}.") if isinstance(v, dict) else [f"{pre}{k} {v}"])]
    return "".join(f", {x}" for x in flat(r.get("overrides") or {}))


def probe_line(p: dict[str, Any]) -> str:
    """One prior alone (the feedback search's sizing probe)."""
    return (f"- prior alone, {skills(p['prior'])}: lists its inventory by step "
            f"{p['listed_by_step']} in {p['listed']:.0%} of {p['rollouts']} train rollouts; "
            f"success {p['success']:.2f} ({p['success_if_listed']:.2f} after a listing, "
            f"{p['success_if_not']:.2f} without)")


def candidate_lines(doc: dict[str, Any], name: str) -> list[str]:
    """One search's measured candidate changes, one bullet each."""
    d = doc["declared"]
    out = [f"Measured (`studies/drift/{name}.py`, `evidence/drift/candidates-{name}.json`;"
           f" {d['tasks']} test tasks x {len(d['seeds'])} seeds, N = {d['n']}, paired by task "
           f"and seed, t interval over tasks):", ""]
    out += [probe_line(p) for p in doc.get("probe", [])]
    for r in [*doc["candidates"], *({**x, "after_stop": True} for x in doc.get("after_stop", []))]:
        if r.get("not_run"):
            out.append(f"- beta {r['beta']:g}{overrides(r)}, A ({skills(r['prior_a'])}) -> B "
                       f"({skills(r['prior_b'])}): not run.")
            continue
        s = r["success"]
        out.append(
            f"- beta {r['beta']:g}{overrides(r)}, A ({skills(r['prior_a'])}) -> B "
            f"({skills(r['prior_b'])}): "
            f"Best-of-N success "
            f"{s['A:bon@4']:.2f} on A, {s['B:bon@4']:.2f} on B; stale gain g0 "
            f"{ci(r['gains']['g0'])}, g1 {ci(r['gains']['g1'])}; retrained g2 "
            f"{ci(r['gains']['g2'])}; fall g1 - g0 {ci(r['fall'])}; recovery g2 - g1 "
            f"{ci(r['recovery'])}: {verdict(r, doc)}.")
    chosen, pending = doc["chosen"], doc.get("pending")
    note = f" Note: {doc['notes']}" if doc.get("notes") else ""
    pick = (f"not yet: {pending} meets it, but a candidate before it in the declared order "
            f"has not run (it is chosen only if that one does not)" if pending
            else "none" if chosen is None else str(chosen))
    out += ["", f"Chosen by the declared rule: {pick}.{note}"]
    row = next((r for r in doc["candidates"] if chosen and not pending
                and verdict(r, doc) == "chosen"), None)
    return out + (["", reading(row)] if row else [])


def side(g: dict[str, Any]) -> str:
    """Where a gain's interval lies (both tests are reported beside it in the row)."""
    return "below 0" if g["hi"] < 0 else "above 0" if g["lo"] > 0 else "not separated from 0"


def reading(r: dict[str, Any]) -> str:
    """What the chosen row's fall and recovery show, read with its gains over Best-of-N."""
    g0, g2 = r["gains"]["g0"], r["gains"]["g2"]
    both = g0["lo"] > 0 and g2["lo"] > 0
    return ("Read with the choice: the stale head's gain over Best-of-N on its own prior (g0) "
            f"is {side(g0)} and the retrained head's on the new prior (g2) is {side(g2)}; "
            + ("both heads gain where they were trained." if both else
               "so the fall and recovery show a head that steers the wrong way after the change "
               "and a retrained one that stops doing so, not a retrained head that beats "
               "Best-of-N."))


def verdict(r: dict[str, Any], doc: dict[str, Any]) -> str:
    """A measured row's standing under the rule (``pending``: an earlier row has not run)."""
    if r.get("after_stop"):
        return ("ran after the first that meets the rule (kept, never chosen): "
                f"{'meets' if r['hurts'] else 'does not meet'} it")
    if not r["hurts"]:
        return "not chosen"
    return "meets the rule (pending)" if doc.get("pending") else "chosen"


def demo_lines(demo: dict[str, Any], head: str = "The committed run (`evidence/drift/demo.json`, "
               "plot `docs/evidence/drift_demo.png`):") -> list[str]:
    """A committed demo run: each check, each decision, fall and recovery."""
    out = [head, ""]
    for r in demo["checks"]:
        why = f": {'; '.join(r['reasons'])}" if r["drift"] else ""
        gi = {"mean": r["gain"], "lo": r["gain_lo"], "hi": r["gain_hi"], "p": r["gain_p"]}
        out.append(f"- check {r['check']} ({r['label']}, champion v{r['version']}): AMC gain "
                   f"over Best-of-N {ci(gi)} ({r['gain_tasks']} tasks x "
                   f"{len(r['seeds'])} seeds); success {r['success']:.3f}; "
                   f"{'DRIFT' if r['drift'] else 'no drift'}{why}")
    for d in demo["decisions"]:
        out.append(f"- round {d['round']} gate: {'promoted' if d['promoted'] else 'kept'}: "
                   f"{d['reason']}")
    first = demo["checks"][0]
    if first["phase"] == "A" and first["drift"]:  # nothing changed before this check
        out.append(f"- check {first['check']} ran on the prior its head was trained on, so its "
                   "drift mark is a false alarm: a point threshold crossed with the prior "
                   "unchanged, not a change that hurts")
    fall = demo["fall"]
    apart = fall is not None and (fall["hi"] < 0 or fall["lo"] > 0) and fall["p"] < 0.05
    out.append(f"- fall of the gain (check B - check A, paired by task): {ci(fall)}"
               + ("" if apart or fall is None else ": not separable here (each check draws "
                  "its own seeds, so only tasks pair); the declared search's fall, paired by "
                  "task and seed, is above"))
    out.append(f"- recovery (check after round 1 - check B, paired by task): "
               f"{ci(demo['recovery'])}")
    return out


def same_gains(first: dict[str, Any]) -> list[str]:
    """Whether the first run's checks measured what the committed run's did (same seeds and
    heads: only the monitor's rule differs), gain by gain."""
    if not DEMO.is_file():
        return []
    now = json.loads(DEMO.read_text())["checks"]
    same = [a["gain"] for a in first["checks"]] == [b["gain"] for b in now]
    return [f"- its checks' gains over Best-of-N are {'the same as' if same else 'not those of'}"
            " the committed run's"]


def diagnostic_lines(entries: list[dict[str, Any]]) -> list[str]:
    """The head diagnostics (train tasks): the head's mean score and the realised success of
    states with and without a listing, per resampling step."""
    out = ["Head diagnostics (`studies/drift/head_diagnostic.py`, "
           "`evidence/drift/head-diagnostic.json`; train tasks no collection used; the head "
           "predicts the dense reward still to come, not success, so compare orders, not "
           "levels):", ""]
    for e in entries:
        cells = "; ".join(
            f"step {r['step']} {'listed' if r['listed'] else 'not listed'} ({r['states']} "
            f"states): head {r['head_mean']:.3f}, success {r['success']:.2f}"
            for r in e["by_state"] if r["states"])
        out.append(f"- head trained on {skills(e['prior'])}{overrides(e)}: {cells}")
    return out


def section() -> str:
    """The generated block, markers included."""
    body = [BEGIN, ""]
    for name in SEARCHES:
        path = ROOT / "evidence" / "drift" / f"candidates-{name}.json"
        if path.is_file():
            body += [*candidate_lines(json.loads(path.read_text()), name), ""]
    diag = ROOT / "evidence" / "drift" / "head-diagnostic.json"
    if diag.is_file():
        body += [*diagnostic_lines(json.loads(diag.read_text())), ""]
    if DEMO.is_file():
        body += [*demo_lines(json.loads(DEMO.read_text())), ""]
    if POINT_RULE.is_file():
        first = json.loads(POINT_RULE.read_text())
        body += [*demo_lines(first, POINT_HEAD), *same_gains(first), ""]
    return "\n".join([*body, "_Generated by `studies/drift/demo_doc.py`._", END])


def main(argv: list[str]) -> None:
    """Rewrite the block (``--check``: exit 1 when it differs from the document's)."""
    text = DOC.read_text()
    pat = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
    if not pat.search(text):
        raise SystemExit(f"{DOC} has no {BEGIN} ... {END} block")
    new = pat.sub(lambda _: section(), text)
    if argv[:1] == ["--check"]:
        raise SystemExit(0 if new == text else 1)
    DOC.write_text(new)


if __name__ == "__main__":
    main(sys.argv[1:])
