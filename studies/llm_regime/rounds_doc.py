"""The rounds of the retraining loop as ``docs/results.md`` reads them: one row per round.

A round (:mod:`amc.pipeline.rounds`) collects fresh prior rollouts, retrains on the growing
dataset, and the promotion gate decides on the frozen set; its ledger record holds each step's
result (``collect``: rollouts; ``dataset``: rows per split and the rounds it spans;
``train``: the value's validation quality; ``promote``: the gate's decision with its p and
mde). Separately, each round's challenger is evaluated on the *declared* test set beside the
kept Best-of-N results (a run summary whose paired rows are ``smc@N+challenger`` − ``bon@N``).

This module only renders: from the ledgers and those summaries it builds, per round, the
dataset size (rows, and rollouts of the rounds the dataset spans), the value's validation
AUC / Pearson / MAE, AMC − Best-of-N at one N on the declared set with its 95% t interval and
exact sign-flip p, and the gate's decision; each round's value on one fixed held-out set
(:mod:`studies.llm_regime.round_quality`); a table of every N of the last evaluated round; and a PNG
of the gain (with its interval) and the value quality per round. Nothing is typed in.

Sources (:func:`load_rounds`): a folder holding ``ledger/round-<r:04d>.json`` (or the records
directly), ``round-<r:04d>/evaluation.json`` and ``heldout-values.json``, or the resolved
copy this module writes (``{"rounds": [{"ledger": ..., "evaluation": ...}]}``), so a
document regenerates from its assets. A gap in the round numbers is an error: a report that
skips a round hides it.
"""

from __future__ import annotations

import gzip
import json
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from amc.results import results_path
from amc.stats import paired_difference
from studies.llm_regime.round_quality import attach_heldout, heldout_lines, rounds_plot

Entry = Mapping[str, Any]
"""``{"ledger": round record, "evaluation": run summary or None}``."""

NO_ROUNDS = "No round has run yet: the table appears when the first round's ledger is kept."


def _num(x: Any) -> float:
    """A finite float, else NaN (missing, None, non-numeric)."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return math.nan
    return v if math.isfinite(v) else math.nan


def _f(x: Any, spec: str = "+.3f") -> str:
    v = _num(x)
    return "n/a" if math.isnan(v) else format(v, spec)


def load_rounds(src: str | Path) -> list[dict[str, Any]]:
    """Entries by round number from a rounds folder or a resolved ``rounds.json`` copy."""
    src = Path(src)
    if src.is_file():
        raw = json.loads(src.read_text())
        if not isinstance(raw, Mapping) or not isinstance(raw.get("rounds"), list):
            raise ValueError(f"{src}: not a rounds file (needs a 'rounds' list)")
        entries = [dict(e) for e in raw["rounds"]]
    elif src.is_dir():
        ledger = src / "ledger" if (src / "ledger").is_dir() else src
        entries = []
        for f in ledger.glob("round-*.json"):
            rec = json.loads(f.read_text())
            ev = src / f"round-{int(rec['round']):04d}" / "evaluation.json"
            entries.append({"ledger": rec,
                            "evaluation": json.loads(ev.read_text()) if ev.is_file() else None})
        _attach_versus_first(src, entries)
        _attach_restores(ledger, entries)
        attach_heldout(src, entries)
    else:
        raise FileNotFoundError(f"{src}: no rounds folder or file")
    for e in entries:
        if not isinstance(e.get("ledger"), Mapping) or "round" not in e["ledger"]:
            raise ValueError(f"{src}: an entry without a ledger record with its 'round'")
    entries.sort(key=lambda e: int(e["ledger"]["round"]))
    nums = [int(e["ledger"]["round"]) for e in entries]
    missing = sorted(set(range(nums[-1] + 1)) - set(nums)) if nums else []
    if missing or len(set(nums)) != len(nums):
        raise ValueError(f"{src}: rounds {nums} are not 0..{nums[-1] if nums else 0} once each "
                         f"(missing {missing})")
    return entries


def kept_metrics(folder: Path, spec: str) -> dict[tuple[str, int], Mapping[str, Any]]:
    """(task, seed) -> metrics of the kept ``<spec>__seed<k>.jsonl.gz`` files of a round's
    evaluation folder (the last record of a (task, seed) wins: a rerun replaces a failure)."""
    out: dict[tuple[str, int], Mapping[str, Any]] = {}
    stem = results_path(".", spec, 0).name.removesuffix("0.jsonl")  # "<spec>__seed"
    for f in sorted(folder.glob(f"{stem}*.jsonl.gz")):
        for line in gzip.decompress(f.read_bytes()).decode().splitlines():
            if line.strip():
                rec = json.loads(line)
                out[(str(rec["task_id"]), int(rec["seed"]))] = rec["metrics"]
    return out


def gains(folder: Path, n: int, metric: str) -> dict[tuple[str, int], float]:
    """AMC@n (the round's challenger) − Best-of-n per (task, seed) of a kept evaluation."""
    smc, bon = kept_metrics(folder, f"smc@{n}+challenger"), kept_metrics(folder, f"bon@{n}")
    return {k: float(smc[k][metric]) - float(bon[k][metric]) for k in smc
            if k in bon and metric in smc[k] and metric in bon[k]}


def versus(a: Path, b: Path, *, n: int = 4, metric: str = "oracle_best") -> dict[str, Any]:
    """Round a's gain − round b's gain on their common (task, seed) runs of the declared set:
    paired by (task, seed), averaged within a task, t interval over tasks and exact sign-flip p
    (:func:`amc.stats.paired_difference`); the question "did the rounds improve the gain"."""
    d = paired_difference(gains(a, n, metric), gains(b, n, metric))
    return {**d.to_dict(), "n": n, "metric": metric, "separates": d.separates}


def _attach_versus_first(src: Path, entries: list[dict[str, Any]]) -> None:
    """Each later round with a kept evaluation gets ``versus_first``: its gain − round 0's."""
    first = src / "round-0000" / "eval"
    for e in entries:
        r = int(e["ledger"]["round"])
        here = src / f"round-{r:04d}" / "eval"
        if r > 0 and first.is_dir() and here.is_dir() and e.get("evaluation"):
            e["versus_first"] = versus(here, first)


def _attach_restores(ledger: Path, entries: list[dict[str, Any]]) -> None:
    """Each round's recorded restores (``restores.jsonl``, written by
    by a restore of the rounds' registry: retrained near-copies), if any."""
    path = ledger / "restores.jsonl"
    found = [json.loads(ln) for ln in path.read_text().splitlines()
             if ln.strip()] if path.is_file() else []
    for e in entries:
        if mine := [x for x in found if int(x["round"]) == int(e["ledger"]["round"])]:
            e["restores"] = mine


def restore_readings(entries: Sequence[Entry]) -> list[str]:
    """One sentence per restore: which runs used the original weights, which a near-copy (a
    later restore's earlier runs used the previous restore's near-copy, not the original)."""
    out = []
    for e in entries:
        before = 0  # declared-set results kept before the previous restore
        for i, x in enumerate(e.get("restores") or []):
            ran = sum(int(v) for k, v in (x.get("kept_before") or {}).items()
                      if k.startswith("round-"))
            head = (f"- Round {int(e['ledger']['round'])}'s value was retrained by a fresh "
                    f"machine's restore ({x['restored_at'][:10]}): largest validation-metric "
                    f"difference {float(x['max_difference']):.2g} (tolerance "
                    f"{float(x['tol']):g}); ")
            if i == 0:
                body = (f"the {ran} declared-set results kept before it ran with the original "
                        "weights")
            elif ran == before:
                body = "no declared-set result ran with the previous restore's near-copy"
            else:
                body = (f"the {ran - before} declared-set results kept since the previous restore "
                        "ran with that restore's near-copy")
            out.append(f"{head}{body}, later ones with this near-copy.")
            before = ran
    return out


def _rollouts(entries: Sequence[Entry], rounds: Sequence[int]) -> float:
    """Rollouts collected by ``rounds`` (task records x G; NaN when any round lacks it)."""
    by = {int(e["ledger"]["round"]): e["ledger"] for e in entries}
    total = 0.0
    for r in rounds:
        total += _num(((by.get(int(r)) or {}).get("steps") or {}).get("collect", {})
                      .get("rollouts"))
    return total


def gain_row(ev: Mapping[str, Any] | None, n: int, metric: str) -> Mapping[str, Any] | None:
    """The paired row ``smc@n+challenger`` − ``bon@n`` of an evaluation (None: not run)."""
    row = ((ev or {}).get("paired") or {}).get(f"smc@{n}+challenger")
    if row is None:
        return None
    if row.get("baseline") != f"bon@{n}":
        raise ValueError(f"paired row smc@{n}+challenger is against {row.get('baseline')!r}, "
                         f"not bon@{n}")
    return row


def round_row(entries: Sequence[Entry], i: int, *, n: int = 4,
              metric: str = "oracle_best") -> dict[str, Any]:
    """The numbers of round ``entries[i]``: size, quality, gain on the declared set, gate."""
    led, ev = entries[i]["ledger"], entries[i].get("evaluation")
    steps = led.get("steps") or {}
    ds, tr, gate = steps.get("dataset") or {}, steps.get("train") or {}, steps.get("promote")
    res = tr.get("result") or {}
    span = ds.get("rounds") or [int(led["round"])]
    g = gain_row(ev, n, metric) or {}
    gate = gate or {}
    return {
        "round": int(led["round"]), "status": led.get("status", "?"),
        "rows": sum(int(v) for v in (ds.get("rows") or {}).values()) if ds.get("rows")
        else math.nan,
        "rollouts": _rollouts(entries, span), "rounds": list(span),
        "version": tr.get("version"),
        "auc": _num(res.get("best_val_auc")), "pearson": _num(res.get("best_val_pearson")),
        "mae": _num(res.get("best_val_mae")),
        "gain": _num(g.get(metric)), "lo": _num(g.get(metric + "_lo")),
        "hi": _num(g.get(metric + "_hi")), "p": _num(g.get(metric + "_p")),
        "tasks": g.get("tasks"), "runs": g.get("runs"),
        "decision": None if not gate else ("promoted" if gate.get("promote") else "kept"),
        "tested": gate.get("tested"), "gate_p": _num(gate.get("p_value")),
        "mde": _num(gate.get("mde")), "gate_delta": _num(gate.get("delta")),
        "vs_first": entries[i].get("versus_first"),
    }


def _size(r: Mapping[str, Any]) -> str:
    rows = "n/a" if math.isnan(_num(r["rows"])) else f"{int(r['rows'])}"
    rol = "n/a" if math.isnan(_num(r["rollouts"])) else f"{int(r['rollouts'])}"
    return f"{rows} / {rol} (rounds {', '.join(str(x) for x in r['rounds'])})"


def _gain(r: Mapping[str, Any]) -> str:
    if math.isnan(r["gain"]):
        return "not evaluated"
    return (f"{r['gain']:+.3f} [{_f(r['lo'])}, {_f(r['hi'])}] over {r['tasks']} tasks "
            f"({r['runs']} runs)")


def _gate(r: Mapping[str, Any]) -> str:
    if r["decision"] is None:
        return "not decided (round open)"
    tested = "tested" if r["tested"] else "untested"
    return (f"{r['decision']} ({tested}; Δ {_f(r['gate_delta'])}, p {_f(r['gate_p'], '.3g')}, "
            f"mde {_f(r['mde'], '.3f')})")


def _versus(v: Mapping[str, Any] | None) -> str:
    """A round's paired gain − round 0's gain: mean [lo, hi], exact p (— where not paired)."""
    if not v:
        return "—"
    return (f"{_f(v.get('mean'))} [{_f(v.get('lo'))}, {_f(v.get('hi'))}], "
            f"p {_f(v.get('p'), '.3g')} ({v.get('tasks')} tasks)")


def rounds_table(rows: Sequence[Mapping[str, Any]], n: int = 4) -> str:
    """The per-round markdown table."""
    head = ["round", "status", "dataset rows / rollouts", "value", "val AUC", "val Pearson",
            "val MAE", f"AMC − Best-of-{n} [95% t]", "exact p", "gain − round 0's [95% t], p",
            "gate"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        ver = "n/a" if r["version"] is None else f"v{r['version']}"
        out.append("| " + " | ".join([
            str(r["round"]), str(r["status"]), _size(r), ver, _f(r["auc"], ".3f"),
            _f(r["pearson"], ".3f"), _f(r["mae"], ".3f"), _gain(r), _f(r["p"], ".3g"),
            _versus(r["vs_first"]), _gate(r)]) + " |")
    return "\n".join(out)


def grid_table(ev: Mapping[str, Any], metric: str = "oracle_best") -> str:
    """Every N of one evaluation: AMC − Best-of-N with interval and exact p (empty: none)."""
    ns = sorted(int(m.group(1)) for k in (ev.get("paired") or {})
                if (m := re.fullmatch(r"smc@(\d+)\+challenger", k)))
    if not ns:
        return ""
    out = ["| N | AMC − Best-of-N [95% t] | exact p | tasks |", "|---|---|---|---|"]
    for n in ns:
        g = gain_row(ev, n, metric) or {}
        out.append(f"| {n} | {_f(g.get(metric))} [{_f(g.get(metric + '_lo'))}, "
                   f"{_f(g.get(metric + '_hi'))}] | {_f(g.get(metric + '_p'), '.3g')} | "
                   f"{g.get('tasks')} |")
    return "\n".join(out)


def rounds_section(entries: Sequence[Entry], title: str, source: str, assets: Path | None,
                   *, n: int = 4, metric: str = "oracle_best") -> list[str]:
    """The section's markdown lines; with ``assets`` the resolved copy and the plot are written
    there (``rounds.json``, ``rounds.png``)."""
    lines = [f"\n## {title}\n", f"_From `{source}`._\n"]
    if not entries:
        return [*lines, NO_ROUNDS]
    rows = [round_row(entries, i, n=n, metric=metric) for i in range(len(entries))]
    lines += [
        f"Per round: the dataset it trained on (rows of every split / rollouts of the rounds it "
        f"spans), the value's validation quality, AMC@{n} − Best-of-{n} on "
        f"{metric} on the declared test set (paired over (task, seed), averaged within a task; "
        "95% t interval over tasks and exact sign-flip p), from round 1 on that gain − round 0's "
        "on the same (task, seed) runs (paired the same way: did the rounds improve it), and "
        "the promotion gate's decision on the frozen set (its paired Δ, p and minimum "
        "detectable effect).", "",
        rounds_table(rows, n)]
    lines += ["", *_readings(rows), *restore_readings(entries)]
    if held := heldout_lines(entries):
        lines += ["", *held]
    last = next((e for e in reversed(entries) if e.get("evaluation")), None)
    if last is not None and (grid := grid_table(last["evaluation"], metric)):
        lines += ["", f"Round {int(last['ledger']['round'])}, every N on the declared set:",
                  "", grid]
    if assets is not None:
        assets.mkdir(parents=True, exist_ok=True)
        from amc.results import write_json_atomic

        write_json_atomic(assets / "rounds.json", {"rounds": [dict(e) for e in entries]})
        if any(not math.isnan(r["gain"]) or not math.isnan(r["auc"]) for r in rows):
            png = rounds_plot(rows, entries, assets / "rounds.png", n)
            lines += ["", f"![rounds]({assets.name}/{png.name})"]
    return [*lines, ""]


def _readings(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """One sentence per fact the table shows: separability of the last gain, promotions."""
    out = []
    ev = [r for r in rows if not math.isnan(r["gain"])]
    if ev:
        r = ev[-1]
        sep = (not math.isnan(r["lo"]) and (r["lo"] > 0 or r["hi"] < 0)
               and not math.isnan(r["p"]) and r["p"] < 0.05)
        out.append(f"- Round {r['round']} (the last evaluated): AMC − Best-of-N "
                   f"{r['gain']:+.3f}, " + ("separable (interval and exact p agree)" if sep
                                             else "not separable") + ".")
        if len(ev) > 1:
            out.append(f"- From round {ev[0]['round']} to round {r['round']}: "
                       + _change(r, ev[0]) + ".")
    promoted = [r["round"] for r in rows if r["decision"] == "promoted"]
    out.append(f"- The gate promoted in rounds {promoted}." if promoted else
               "- The gate promoted in no round.")
    return out


def rounds_sentence(entries: Sequence[Entry], *, n: int = 4, metric: str = "oracle_best",
                    link: str = "docs/results.md#rounds-on-the-embedded-prior") -> str:
    """The README's one sentence on the loop: rounds closed and evaluated, each evaluated
    round's AMC − Best-of-N with interval and exact p, and whether that says the rounds
    improved the gain (only with two evaluated rounds; the change between them is reported,
    not tested, so "improved" is never claimed from it)."""
    rows = [round_row(entries, i, n=n, metric=metric) for i in range(len(entries))]
    closed = [r["round"] for r in rows if r["status"] == "closed"]
    ev = [r for r in rows if not math.isnan(r["gain"])]
    head = (f"The retraining loop on the embedded prior ([rounds]({link})): "
            f"{len(closed)} round(s) closed {closed}, {len(ev)} evaluated on the declared "
            "test set")
    gains = "; ".join(f"round {r['round']}: AMC − Best-of-{n} {r['gain']:+.3f} "
                      f"[{r['lo']:+.3f}, {r['hi']:+.3f}], exact p {r['p']:.2g}" for r in ev)
    if len(ev) < 2:
        return (head + (f" ({gains})" if gains else "") + "; whether the rounds improved "
                "AMC's gain is not measured yet (it needs two evaluated rounds).")
    return (f"{head} ({gains}): from round {ev[0]['round']} to round {ev[-1]['round']}, "
            f"{_change(ev[-1], ev[0])}.")


def _change(last: Mapping[str, Any], first: Mapping[str, Any]) -> str:
    """The change of the gain from round ``first`` to ``last``: the paired test when ``last``
    holds it against round 0 (improved / got worse only when interval and exact p agree), else
    the unpaired change, from which nothing is claimed."""
    v = last.get("vs_first")
    if not v or first["round"] != 0:
        return (f"the gain moved {last['gain'] - first['gain']:+.3f} (not paired-tested, so no "
                "improvement is claimed from it)")
    verdict = ("not separable: no improvement shown" if not v.get("separates") else
               "the rounds improved the gain" if v["mean"] > 0 else "the gain got worse")
    return (f"the gain changed {_versus(v)}, paired over (task, seed) on the declared set: "
            f"{verdict}")
