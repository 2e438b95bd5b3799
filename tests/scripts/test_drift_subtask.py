"""A drift candidate's heads survive a killed run: ``head`` trains once per folder, keeps
nothing for a training that failed, and a rerun reuses what finished."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from scripts.drift_subtask import head


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
