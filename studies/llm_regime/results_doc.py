"""``docs/results.md`` of this study: the product's results document plus the study's sections.

The product's :func:`amc.reports.results_doc.write_results_doc` (``amc results-doc``) renders a
pipeline summary, ``amc run`` summaries and verbatim markdown sections. This study adds two
sections of its own, as renderers placed first: the declared 60-task test set
(:mod:`studies.llm_regime.declared_section`: the declaration, the primary result, planned and
realised power, then the run's table) and the retraining rounds kept in
``evidence/llm-regime/rounds`` (:mod:`studies.llm_regime.rounds_doc`). Each renderer copies what
it read into the document's assets folder (the declared run's resolved summary, ``rounds.json``
and ``rounds.png``), so the document regenerates from its assets.

``python -m studies.llm_regime.results_doc`` takes the results-doc options that
``scripts/results_doc.sh`` uses, plus ``--declared TITLE=DECLARED,EVAL`` (repeatable) and
``--rounds FOLDER`` (``--rounds-title``).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from amc.reports import results_doc
from amc.reports.results_doc import Renderer, hours, run_body
from amc.reports.run_summary import load_run_summary
from amc.results import write_json_atomic
from studies.llm_regime.declared_section import declared_section
from studies.llm_regime.rounds_doc import load_rounds, rounds_section

ROUNDS_TITLE = "Rounds on the embedded prior"


def declared_renderer(title: str, declared: Path, run_path: Path) -> Renderer:
    """A declared test set's section: its declaration, primary result and power, then the run
    (whose resolved summary is copied to ``<assets>/<declaration's stem>.json``)."""

    def render(assets: Path) -> tuple[list[str], list[Path]]:
        run = load_run_summary(Path(run_path))
        slug = re.sub(r"[^a-z0-9]+", "-", Path(declared).stem.lower()).strip("-")
        write_json_atomic(assets / f"{slug}.json", run)  # studies/confirm/table.py reads it
        lines = declared_section(title, json.loads(Path(declared).read_text()), run,
                                 str(declared), str(run_path))
        lines += [f"- wall time {hours(run.get('wall_s'))} over {run.get('sessions') or '?'} "
                  "session(s)", *run_body(run)]
        return lines, [Path(run_path)]

    return render


def rounds_renderer(title: str, src: Path) -> Renderer:
    """The retraining rounds' table and plot (``rounds.json`` and ``rounds.png`` in assets)."""

    def render(assets: Path) -> tuple[list[str], list[Path]]:
        return rounds_section(load_rounds(src), title, str(src), assets), [Path(src)]

    return render


def write_results_doc(summary_file: str | Path | None, plots_dir: str | Path, out: str | Path,
                      *, declared: Sequence[tuple[str, Path, Path]] = (),
                      rounds: tuple[str, Path] | None = None, **kwargs: Any) -> Path:
    """The product's document with the declared sections, then the rounds, placed first (after
    any verbatim ``sections``); the other keywords are the product's."""
    renderers = [declared_renderer(*d) for d in declared]
    if rounds is not None:
        renderers.append(rounds_renderer(*rounds))
    return results_doc.write_results_doc(summary_file, plots_dir, out, renderers=renderers,
                                         **kwargs)


def _pair(flag: str, item: str) -> tuple[str, str]:
    title, sep, rest = item.rpartition("=")
    if not sep or not title:
        raise SystemExit(f"{flag} {item!r}: need TITLE=...")
    return title, rest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m studies.llm_regime.results_doc",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("docs/results.md"))
    ap.add_argument("--title", default="Results")
    ap.add_argument("--summary", type=Path, help="the pipeline summary (report stage)")
    ap.add_argument("--plots-dir", type=Path, default=Path("plots"))
    ap.add_argument("--summary-title")
    ap.add_argument("--intro")
    ap.add_argument("--section", action="append", default=[], help="TITLE=FILE.md")
    ap.add_argument("--extra", action="append", default=[], help="TITLE=summary.json")
    ap.add_argument("--grpo", help="FROZEN,POLICY,METRICS")
    ap.add_argument("--declared", action="append", default=[], help="TITLE=DECLARED,EVAL")
    ap.add_argument("--rounds", type=Path, help="rounds folder or resolved rounds.json")
    ap.add_argument("--rounds-title", default=ROUNDS_TITLE)
    a = ap.parse_args(argv)
    decls = []
    for item in a.declared:
        title, paths = _pair("--declared", item)
        pair = [Path(x) for x in paths.split(",")]
        if len(pair) != 2 or not all(x.is_file() for x in pair):
            raise SystemExit(f"--declared {item!r}: need TITLE=DECLARED,EVAL of existing files")
        decls.append((title, pair[0], pair[1]))
    grpo = None if a.grpo is None else tuple(Path(x) for x in a.grpo.split(","))
    if grpo is not None and (len(grpo) != 3 or not all(x.is_file() for x in grpo)):
        raise SystemExit(f"--grpo {a.grpo!r}: need FROZEN,POLICY,METRICS of existing files")
    written = write_results_doc(
        a.summary, a.plots_dir, a.out, title=a.title, command="scripts/results_doc.sh",
        extra=[_pair("--extra", x) for x in a.extra], intro=a.intro, grpo=grpo,
        summary_title=a.summary_title,
        sections=[(t, Path(p)) for t, p in (_pair("--section", x) for x in a.section)],
        declared=decls, rounds=None if a.rounds is None else (a.rounds_title, a.rounds))
    print(f"wrote {written}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
