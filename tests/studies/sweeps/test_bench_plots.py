"""The fixed-budget benchmarks' figures draw every committed shape of cells."""

from __future__ import annotations

from pathlib import Path

from studies.sweeps.plots import plot_bench_q
from tests.studies.sweeps.test_celltable import record


def test_cells_at_one_q_with_two_n_are_two_series(tmp_path: Path):
    """Two test cells at the same q and value but N = 4 and 8 (SciWorld's ceilings): drawn
    as two series (sorting them by q alone had compared their statistics and raised)."""
    a, b = record(80.0), record(40.0)
    b["cell"] = {**b["cell"], "n": 8}
    b["rows"][0]["amc"]["metrics"]["oracle_best"] = 0.9  # another result at the same q
    out = plot_bench_q([a, b, {**a, "cell": {**a["cell"], "split": "validation"}}], "SciWorld",
                       tmp_path / "q.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
