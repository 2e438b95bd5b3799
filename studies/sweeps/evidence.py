"""``docs/evidence.md``, generated from the committed sweep results (no hand-typed numbers).

Reads every cell record under ``evidence/runs/`` (written by :mod:`studies.sweeps.harvest`) and the
learned value's quality curve (``evidence/value_quality.json``; earlier values' under
``evidence/values/``), recomputes every comparison
from the per-(task, seed) rows (:mod:`studies.sweeps.stats`: paired AMC - Best-of-N at equal N,
seeds averaged within a task, 95% intervals over tasks), and writes the document and its plots
(PNG under ``docs/evidence/``). One-factor-at-a-time tables around the base point
:data:`BASE`, per value kind; the best regime of the learned value (chosen on validation cells
when there are any), the goal check, and where AMC cannot win, with the measured reason.

    python -m studies.sweeps.evidence [--runs evidence] [--doc docs/evidence.md] [--protocol FILE]
                                  [--check]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from studies.sweeps.bench_values import split_current
from studies.sweeps.benchdoc import bench_of, bench_sections, bench_sentence, summary_section
from studies.sweeps.harvest import loads_quality, read_record
from studies.sweeps.protocol import Protocol, load_protocol
from studies.sweeps.report import (
    best_regime,
    cannot_win,
    factor_section,
    goal_section,
    headline,
    intro,
    learned_cells,
    sharpen_section,
    value_section,
)
from studies.sweeps.report_closed import closed_section, split_closed
from studies.sweeps.report_goal import value_goal_section
from studies.sweeps.report_methods import methods_section
from studies.sweeps.report_values import quality_section, split_superseded, superseded_section
from studies.sweeps.report_variants import variants_section

FACTORS = ("q", "beta", "schedule", "n", "slack")
PROTOCOL = Path("sweeps/protocol-issue30.yaml")
"""The declared protocol whose candidates get the "Value methods" section."""
RENDER_PROTOCOL = Path("sweeps/protocol-issue30-render.yaml")
"""Issue 30's second declared study (the value's rendering), its own methods section."""
VARIANTS = Path("docs/value-variants/result.json")
"""``benchmarks/bench_value_variants.py``'s result: ensembles and LoRA, offline."""


def load_runs(root: Path) -> list[dict[str, Any]]:
    """Every cell record under ``root/runs`` (sorted by file name: a stable document)."""
    files = sorted((root / "runs").glob("*.json"))
    if not files:
        raise FileNotFoundError(f"no cell records under {root / 'runs'}")
    return [read_record(p) for p in files]


def load_quality(root: Path) -> dict[str, Any] | None:
    p = root / "value_quality.json"
    return loads_quality(p.read_text()) if p.is_file() else None


def load_cost(root: Path) -> dict[str, Any] | None:
    """SciWorld's measured per-step costs (``root/sciworld_cost.json``), if committed, with
    the rollout-value pairs' (``root/sciworld_rollout_cost.json``) under ``rollout``."""
    p, r = root / "sciworld_cost.json", root / "sciworld_rollout_cost.json"
    if not p.is_file():
        return None
    cost = json.loads(p.read_text())
    return {**cost, "rollout": json.loads(r.read_text())} if r.is_file() else cost


def load_current(root: Path) -> dict[str, str]:
    """Benchmark -> the model hash of its value stage's current value
    (``root/value_quality_<bench>.json``; benchmarks without one are left out)."""
    out = {}
    for b in ("webshop", "sciworld"):
        p = root / f"value_quality_{b}.json"
        if p.is_file():
            out[b] = str(json.loads(p.read_text())["model_hash"])
    return out


def load_values(root: Path) -> dict[str, dict[str, Any]]:
    """Every learned value's quality record by content hash (``root/values/<hash>.json``)."""
    return {p.stem: loads_quality(p.read_text())
            for p in sorted((root / "values").glob("*.json"))}


OTHERS = "**Other benchmarks:**"
"""Prefix of the line that opens the other benchmarks' sentences in docs/evidence.md."""


OPEN_CHANNEL_VALUE = "cf06d7587c7655ec"
"""The learned value of the sweep before issue 30 closed the side channels (its last value):
that finished sweep's sections read this value's quality (``values/<id>.json``), whatever value
the value stage holds now (since issue 30 the protocol's winner, shown in the quality section)."""


def render(runs: list[dict[str, Any]], quality: dict[str, Any] | None,
           plots: Path | None, link: str,
           values: dict[str, dict[str, Any]] | None = None,
           cost: dict[str, Any] | None = None, protocol: Protocol | None = None,
           current: dict[str, str] | None = None,
           more: tuple[Protocol, ...] = (),
           variants: dict[str, Any] | None = None) -> str:
    """The whole document (plots written under ``plots`` when given, linked as ``link/``):
    the per-benchmark summary first, then TextCraft's sweep, then the other benchmarks; with
    a declared ``protocol``, its candidates' section (:mod:`studies.sweeps.report_methods`);
    ``current`` (benchmark -> its value stage's model hash, :func:`load_current`) sets the
    cells of an earlier WebShop / SciWorld value apart; ``more``: further declared protocols,
    each its own methods section after the first's; ``variants``: the representation
    benchmark's result (:mod:`studies.sweeps.report_variants`)."""
    others, old_others = split_current([r for r in runs if bench_of(r) != "textcraft"],
                                       current or {})
    runs, after = split_closed([r for r in runs if bench_of(r) == "textcraft"])
    before = (values or {}).get(OPEN_CHANNEL_VALUE) or quality  # the open-channel sweep's
    runs, old = split_superseded(runs, before)
    parts = [intro(runs), summary_section(runs + others, cost)]
    best = best_regime(runs)
    parts.append(headline(runs, best))
    parts.append(OTHERS + " " + " ".join(bench_sentence(others, b)
                                         for b in ("webshop", "sciworld")) + "\n")
    parts.append(goal_section(runs, best))
    parts.append(learned_cells(runs))
    parts.append(value_section(runs, before))
    parts.append(sharpen_section(runs, plots, link))
    for f in FACTORS:
        parts.append(factor_section(runs, f, plots, link))
    parts.append(cannot_win(runs))
    parts.append(closed_section(after, values or {}))
    parts.append(methods_section(protocol, after, values or {}))
    parts += [methods_section(m, after, values or {}) for m in more]
    parts.append(variants_section(variants))
    parts.append(value_goal_section(protocol, after, values or {}))
    parts.append(superseded_section(old, values or {}))
    parts.append(quality_section(quality, plots, link))
    parts += bench_sections(others, plots, link, values, old_others)
    return "\n".join(p for p in parts if p).rstrip() + "\n"


def with_results_table(text: str, root: Path) -> str:
    """``text`` with issue 51's results table (:func:`studies.confirm.table.section`: the
    confirmatory rows first, then the exploratory cells and why) after the generated-by line."""
    from studies.confirm.table import section

    head, sep, rest = text.partition("\n\n_Generated by")
    line, nl, tail = rest.partition("\n")
    return (f"{head}{sep}{line}{nl}\n## Results: one declared result per row\n\n"
            f"{section(root)}\n{tail}")


SIM_OPTIONS = Path("evidence/sim-value-options/result.md")
"""Issue 50 item 4's generated result (:mod:`studies.sim_value_options.report`)."""


def with_sim_options(text: str, root: Path) -> str:
    """``text`` with the re-chosen value's section at the end, once its study has reported."""
    f = root / SIM_OPTIONS
    if not f.is_file():
        return text
    title, _, body = f.read_text().partition("\n")
    return f"{text}\n#{title}\n{body}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=Path, default=Path("evidence"))
    ap.add_argument("--doc", type=Path, default=Path("docs/evidence.md"))
    ap.add_argument("--protocol", type=Path, default=PROTOCOL,
                    help="the declared value-methods protocol (its section; absent: none)")
    ap.add_argument("--variants", type=Path, default=VARIANTS,
                    help="the value-variants benchmark's result (its section; absent: none)")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 when the document differs from what the results give")
    args = ap.parse_args(argv)
    plots = None if args.check else args.doc.parent / "evidence"
    text = render(load_runs(args.runs), load_quality(args.runs), plots, "evidence",
                  load_values(args.runs), load_cost(args.runs),
                  load_protocol(args.protocol) if args.protocol.is_file() else None,
                  load_current(args.runs),
                  (load_protocol(RENDER_PROTOCOL),) if RENDER_PROTOCOL.is_file() else (),
                  json.loads(args.variants.read_text()) if args.variants.is_file() else None)
    text = with_sim_options(with_results_table(text, Path(".")), Path("."))
    if args.check:
        same = args.doc.is_file() and args.doc.read_text() == text
        print("up to date" if same else f"{args.doc} differs from the committed results")
        return 0 if same else 1
    args.doc.parent.mkdir(parents=True, exist_ok=True)
    args.doc.write_text(text)
    print(args.doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
