"""AMC minus zero-shot SMC, paired by (task, seed), on the declared set's kept results."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from amc.reports.paired import paired_to_bon, paired_to_zero_shot
from studies.llm_regime.kept_pairs import kept_results

KEPT = Path(__file__).resolve().parents[2] / "evidence/llm-regime/testset60/eval"
METHODS = {"bon@4": {"role": "bon", "n": 4}, "smc@4": {"role": "smc", "n": 4},
           "smc@4+challenger": {"role": "amc", "n": 4}, "react": {"role": "react", "n": 1}}


def _rows(spec: str) -> dict[tuple[str, int], dict]:
    out = {}
    for f in sorted(KEPT.glob(f"{spec}__seed*.jsonl.gz")):
        with gzip.open(f, "rt") as fh:
            for line in fh:
                d = json.loads(line)
                out[(d["task_id"], d["seed"])] = d
    return out


@pytest.fixture(scope="module")
def results() -> dict:
    return kept_results(KEPT, list(METHODS), [0, 1, 2])


def test_amc_minus_zero_shot_is_paired_within_task_with_each_sides_calls(results: dict) -> None:
    row = paired_to_zero_shot(METHODS, results)["smc@4+challenger"]
    assert row["baseline"] == "smc@4" and row["runs"] == 180 and row["tasks"] == 60
    a, b = _rows("smc@4+challenger"), _rows("smc@4")
    by_task = defaultdict(list)  # recomputed here: seeds averaged within a task first
    for key in a:
        by_task[key[0]].append(a[key]["metrics"]["oracle_best"] - b[key]["metrics"]["oracle_best"])
    assert row["oracle_best"] == pytest.approx(np.mean([np.mean(v) for v in by_task.values()]))
    assert row["calls"] == pytest.approx(np.mean([r["usage"]["calls"] for r in a.values()]))
    assert row["baseline_calls"] == pytest.approx(
        np.mean([r["usage"]["calls"] for r in b.values()]))
    assert row["baseline_calls"] > row["calls"]  # the zero-shot value's scores cost calls
    # only AMC rows: plain SMC and Best-of-N are not compared with the zero-shot value
    assert set(paired_to_zero_shot(METHODS, results)) == {"smc@4+challenger"}


def test_the_best_of_n_rows_are_unchanged_and_carry_no_calls(results: dict) -> None:
    rows = paired_to_bon(METHODS, results)
    assert set(rows) == {"smc@4", "smc@4+challenger"}
    assert all(r["baseline"] == "bon@4" and "calls" not in r for r in rows.values())
    committed = json.loads((KEPT.parent / "evaluation.json").read_text())["paired"]
    assert rows == committed
