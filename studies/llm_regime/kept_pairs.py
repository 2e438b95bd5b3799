"""A summary's paired differences recomputed from its kept, gzipped results files.

The report stage writes ``paired`` (every method minus Best-of-N at its N, with the t interval
and the exact sign-flip p) into ``summary.json``. A summary copied into ``docs/`` before the
exact p existed lacks it; its kept results (``<method>__seed<k>.jsonl.gz``, e.g.
``evidence/llm-regime/eval``) hold every (task, seed) record, so the same function
(:func:`amc.pipeline.report.paired_differences`) recomputes the block from them:

    python -m studies.llm_regime.kept_pairs SUMMARY KEPT_DIR

Only ``paired`` and ``paired_values`` (AMC minus zero-shot SMC, with each side's prior calls
per run) change; every other field of the summary stays as the report wrote it.
"""

from __future__ import annotations

import gzip
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from amc.results import write_json_atomic
from amc.smc.records import TaskResult


def kept_results(kept: Path, specs: Sequence[str], seeds: Sequence[int]
                 ) -> dict[str, list[TaskResult]]:
    """``spec#seed`` -> records of the kept files that exist."""
    out: dict[str, list[TaskResult]] = {}
    for spec in specs:
        for seed in seeds:
            f = kept / f"{spec}__seed{seed}.jsonl.gz"
            if f.is_file():
                with gzip.open(f, "rt") as fh:
                    out[f"{spec}#{seed}"] = [TaskResult.from_dict(json.loads(line))
                                             for line in fh if line.strip()]
    return out


def refresh(summary_file: Path, kept: Path) -> dict[str, Any]:
    """Recompute ``paired`` and ``paired_values`` of ``summary_file`` from ``kept``; write it
    back; return it."""
    from amc.pipeline.report import paired_differences
    from amc.reports.paired import paired_to_zero_shot

    s = json.loads(summary_file.read_text())
    results = kept_results(kept, list(s["methods"]), list(s.get("seeds") or []))
    if not results:
        raise FileNotFoundError(f"no kept results of {summary_file}'s methods in {kept}")
    s["paired"] = paired_differences(s, results)
    s["paired_values"] = paired_to_zero_shot(s["methods"], results)
    write_json_atomic(summary_file, s)
    return s


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2:
        print("error: usage: python -m studies.llm_regime.kept_pairs SUMMARY KEPT_DIR",
              file=sys.stderr)
        return 2
    try:
        refresh(Path(args[0]), Path(args[1]))
    except (OSError, ValueError, KeyError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
