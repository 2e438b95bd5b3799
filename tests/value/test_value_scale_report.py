"""The value-scale benchmark's generated verdict: met, not met in wall time only (the CPU-time
lower bound fits), or not met with the margin by which even the lower bound misses."""

from __future__ import annotations

from benchmarks.bench_value_scale import Timed
from benchmarks.value_scale_report import embed_cpu_per_state, goal_reading, runs_table


def _run(wall: float, cpu: float, rows: int = 20_000) -> Timed:
    m = {"embed_cpu_seconds": 0.8 * cpu, "embed_new_states": 1000.0, "head_seconds": 2.0,
         "best_val_pearson": 0.5}
    return Timed("cold cache", "int8-l3", rows, rows // 2, wall, cpu, "1.0", m)


def test_goal_verdicts() -> None:
    assert "**met** (250 s wall)" in goal_reading(_run(250, 480))
    assert "**not met in wall time** (900 s" in goal_reading(_run(900, 560))
    missed = goal_reading(_run(900, 800))
    assert "**not met**" in missed and "misses 300 s by 100 s (1.3x)" in missed
    assert "not measured at 20,000" in goal_reading(_run(100, 100, rows=19_999))
    assert "Embedding is 80% of that CPU time" in missed


def test_table_has_cpu_lower_bound_and_per_state_cost() -> None:
    run = _run(900, 800)
    assert embed_cpu_per_state(run) == 0.64
    row = runs_table([run]).splitlines()[-1].split(" | ")
    assert row[4:8] == ["900", "800", "400", "640"]  # wall, CPU, CPU / 2, CPU ms per state
