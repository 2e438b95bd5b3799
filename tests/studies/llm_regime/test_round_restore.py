"""The restore's reproduction check (tolerance, version) and what it records."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest

from amc.pipeline.params import PipelineParams
from studies.llm_regime import round_restore

RECORDED = {"version": "1", "result": {"best_val_pearson": 0.60, "best_val_auc": 0.84,
                                       "best_val_mae": None}}


def test_a_near_copy_within_the_tolerance_passes_with_its_differences() -> None:
    got = {"version": 1, "best_val_pearson": 0.603, "best_val_auc": 0.84, "best_val_mae": None}
    diff = round_restore.check_reproduced(0, got, RECORDED, tol=0.01)
    assert diff["best_val_pearson"] == pytest.approx(0.003)
    assert diff["best_val_auc"] == 0.0 and diff["best_val_mae"] == 0.0  # both missing: same


@pytest.mark.parametrize("got, match", [
    ({"version": "1", "best_val_pearson": 0.62, "best_val_auc": 0.84}, "best_val_pearson by 0.02"),
    ({"version": "2", "best_val_pearson": 0.60, "best_val_auc": 0.84}, "its number"),
    ({"version": "1", "best_val_pearson": 0.60, "best_val_auc": 0.84, "best_val_mae": 0.1},
     "best_val_mae by inf"),  # a metric the ledger lacks is not "within" anything
    ({"version": "1", "best_val_pearson": float("nan"), "best_val_auc": 0.84}, "pearson"),
])
def test_a_model_that_does_not_reproduce_is_refused(got: dict, match: str) -> None:
    with pytest.raises(RuntimeError, match=match):
        round_restore.check_reproduced(3, got, RECORDED, tol=0.01)


def test_the_default_tolerance_is_strict() -> None:
    got = {"version": "1", "best_val_pearson": 0.6 + 1e-4, "best_val_auc": 0.84}
    with pytest.raises(RuntimeError, match="tolerance 1e-06"):
        round_restore.check_reproduced(0, got, RECORDED, PipelineParams().rounds.restore_tol)
    assert math.isinf(round_restore.metric_differences({"best_val_auc": 1.0}, {})["best_val_auc"])


def test_restores_are_appended_with_what_ran_before(tmp_path: Path) -> None:
    kept = tmp_path / "kept"
    (kept / "round-0000" / "eval").mkdir(parents=True)
    (kept / "gate-eval").mkdir()
    with gzip.open(kept / "round-0000" / "eval" / "smc@4+challenger__seed2.jsonl.gz", "wt") as f:
        f.write('{"task_id": "1"}\n{"task_id": "2"}\n{"task_id": "3"')  # the last cut short
    with gzip.open(kept / "gate-eval" / "smc@4+challenger__seed0.jsonl.gz", "wt") as f:
        f.write('{"task_id": "9"}\n')
    counts = round_restore.kept_counts(kept, 0)
    assert counts == {"round-0000/eval/smc@4+challenger__seed2.jsonl.gz": 2,
                      "gate-eval/smc@4+challenger__seed0.jsonl.gz": 1}
    assert round_restore.kept_counts(kept, 1) == {"gate-eval/smc@4+challenger__seed0.jsonl.gz": 1}
    assert round_restore.kept_counts(None, 0) == {}
    p = PipelineParams().model_copy(update={"rounds": PipelineParams().rounds.model_copy(
        update={"ledger_dir": tmp_path / "ledger"})})
    path = p.rounds.ledger_dir / round_restore.RESTORES
    assert not path.exists()
    round_restore.record_restore(p, {"round": 0, "max_difference": 0.003})
    round_restore.record_restore(p, {"round": 1, "max_difference": 0.0})
    got = [json.loads(ln) for ln in path.read_text().splitlines()]
    assert [g["round"] for g in got] == [0, 1] and got[0]["max_difference"] == 0.003
    assert all(g["restored_at"].endswith("Z") for g in got)
