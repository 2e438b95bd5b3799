"""Keep the search's finished rollouts in the repository as they land (resumable runs write
``runs/regime-search/depth{d}/*.jsonl``; only complete lines are kept, gzipped without a
timestamp so the same lines give the same bytes).

    python -m studies.llm_regime.regime_search.keep
"""

from __future__ import annotations

import gzip
from pathlib import Path

from studies.llm_regime.regime_search.analyse import KEPT, REPO

RUNS = REPO / "runs/regime-search"


def keep(runs: Path = RUNS, kept: Path = KEPT) -> list[Path]:
    """Gzip every run file's complete lines into ``kept``; returns the files written."""
    written = []
    for src in sorted(runs.glob("depth*/*.jsonl")):
        lines = [x for x in src.read_text().splitlines(keepends=True) if x.endswith("\n")]
        if not lines:
            continue
        dest = kept / src.parent.name / (src.name + ".gz")
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_suffix(".tmp")
        with open(tmp, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
            gz.write("".join(lines).encode())
        tmp.replace(dest)
        written.append(dest)
    return written


if __name__ == "__main__":
    for f in keep():
        print(f"kept {f.relative_to(REPO)}")
