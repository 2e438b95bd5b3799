"""Each restore of a round's value says which declared-set runs used which weights."""

from __future__ import annotations

from studies.llm_regime.rounds_doc import restore_readings


def _restore(day: str, kept: int) -> dict:
    return {"restored_at": f"2026-12-0{day}T00:00:00", "max_difference": 1e-6, "tol": 0.01,
            "kept_before": {"round-0000/eval/a.jsonl.gz": kept, "gate-eval/b.jsonl.gz": 30}}


def test_a_later_restore_counts_the_runs_since_the_previous_one() -> None:
    entry = {"ledger": {"round": 0}, "restores": [_restore("3", 600), _restore("4", 666)]}
    first, second = restore_readings([entry])
    assert "the 600 declared-set results kept before it ran with the original weights" in first
    assert "the 66 declared-set results kept since the previous restore ran with that " \
        "restore's near-copy, later ones with this near-copy." in second
    assert "original weights" not in second  # the gate's files are not declared-set results


def test_a_restore_with_no_run_since_the_previous_one_says_so() -> None:
    entry = {"ledger": {"round": 0}, "restores": [_restore("3", 666), _restore("4", 666)]}
    _, second = restore_readings([entry])
    assert "no declared-set result ran with the previous restore's near-copy" in second
    assert "the 0 " not in second
