"""A drift candidate's heads survive a killed run: ``head`` trains once per folder, keeps
nothing for a training that failed, and a rerun reuses what finished."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from studies.drift.subtask import head, run_set


def test_head_trains_once_and_is_reused(tmp_path: Path) -> None:
    calls: list[str] = []

    def train(uri: str) -> Callable[[], str]:
        def run() -> str:
            calls.append(uri)
            return uri
        return run

    assert head(tmp_path, "stale", train("models:/m/1")) == "models:/m/1"
    assert head(tmp_path, "stale", train("models:/m/9")) == "models:/m/1"  # reused, not retrained
    assert head(tmp_path, "fresh", train("models:/m/2")) == "models:/m/2"
    assert calls == ["models:/m/1", "models:/m/2"]
    other = tmp_path / "other"  # another candidate's folder trains its own
    other.mkdir()
    assert head(other, "stale", train("models:/n/1")) == "models:/n/1"


def test_a_failed_training_is_not_recorded(tmp_path: Path) -> None:
    def killed() -> str:
        raise KeyboardInterrupt

    assert head(tmp_path, "stale", lambda: "models:/m/1") == "models:/m/1"
    with pytest.raises(KeyboardInterrupt):
        head(tmp_path, "fresh", killed)
    assert head(tmp_path, "stale", killed) == "models:/m/1"  # what finished is kept
    assert head(tmp_path, "fresh", lambda: "models:/m/2") == "models:/m/2"  # trained on rerun


def _row(beta: float, a: dict, b: dict, hurts: bool, over: dict | None = None) -> str:
    row = {"beta": beta, **({"overrides": over} if over else {}), "prior_a": a, "prior_b": b,
           "hurts": hurts}
    return "RESULT " + json.dumps(row)


def test_a_row_after_one_not_run_is_pending_and_later_runs_are_kept(tmp_path: Path) -> None:
    a, b = {"q": 0.5}, {"q": 0.1}
    cands = ((a, b), (b, a))
    over = {"train": {"num_layers": 6}}
    done = tmp_path / "done.txt"  # regime 1's second candidate has not run
    done.write_text("\n".join([_row(0.05, a, b, False), _row(0.05, a, b, True, over),
                               _row(0.05, b, a, True, over)]) + "\n")
    out = tmp_path / "out.json"
    run_set(["--done", str(done), "--only-done", str(out)], cands, ((0.05, {}), (0.05, over)),
            str(out), {})
    doc = json.loads(out.read_text())
    assert [r.get("not_run", False) for r in doc["candidates"]] == [False, True, False]
    assert doc["chosen"] is None  # the not-run candidate comes first in the declared order
    assert doc["pending"]["overrides"] == over and doc["pending"]["prior_a"] == a
    assert [r["prior_a"] for r in doc["after_stop"]] == [b]  # ran after the stop: kept
    done.write_text(done.read_text() + _row(0.05, b, a, False) + "\n")  # it ran: no hurt
    run_set(["--done", str(done), "--only-done", str(out)], cands, ((0.05, {}), (0.05, over)),
            str(out), {})
    doc = json.loads(out.read_text())
    assert "pending" not in doc and doc["chosen"]["overrides"] == over
