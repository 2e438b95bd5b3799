"""The per-cell table of the fixed-budget benchmarks, on a hand-built record."""

from __future__ import annotations

from studies.sweeps.celltable import cell_table, cost
from studies.sweeps.grid import GRIDS


def record(wall: float | None) -> dict:
    cell = {**GRIDS["sciworld"].base, "split": "test", "seeds": [0, 1], "q": 0.3, "n": 4,
            "beta": 0.1, "value": "rollout"}
    # 2 tasks x 2 seeds: Best-of-N 40 calls a pair, AMC 100 or 300
    rows = [{"task_id": str(t), "seed": s,
             "bon": {"calls": 40, "metrics": {"oracle_best": 0.5, "success": 0.0}},
             "amc": {"calls": 100 if s == 0 else 300,
                     "metrics": {"oracle_best": 0.5 + 0.1 * (t + 1), "success": 1.0}}}
            for t in range(2) for s in range(2)]
    return {"cell": cell, "rows": rows, **({"wall_s": wall} if wall else {})}


def test_the_cost_columns_are_calls_per_pair_of_each_method_and_wall_per_pair():
    assert cost(record(80.0)) == "40 / 200 | 20"  # 4 pairs: 800 AMC calls, 80 s
    assert cost(record(None)) == "40 / 200 | –"


def test_a_row_per_record_with_its_mark_and_the_optional_success_column():
    a, b = record(80.0), record(40.0)
    lines = cell_table([a, b], {id(b)}, lambda r: " (x)" if r is a else "", success=True)
    assert len(lines) == 4 and lines[0].count("|") == lines[1].count("|") == 11
    assert lines[2].startswith("| test (x) | q = 0.3, β = 0.1") and "✓" not in lines[2]
    assert lines[3].startswith("| test ✓ |") and lines[3].endswith("| 40 / 200 | 10 |")
    assert "| 4 (2) | 0.500 | 0.650 | +0.150 [" in lines[2]
    assert "+1.000" in lines[2]  # success AMC - BoN
    plain = cell_table([a], set())
    assert plain[0].count("|") == plain[1].count("|") == plain[2].count("|") == 10
