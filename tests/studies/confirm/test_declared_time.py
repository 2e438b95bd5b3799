"""A declaration's time is git's: when the commit that added the file was made, never typed."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from studies.confirm.protocol import declared_at, load

ROOT = Path(__file__).resolve().parents[3]
PROTOCOLS = sorted((ROOT / "studies/confirm").glob("*.json"))


def test_the_committed_declarations_carry_gits_times() -> None:
    if declared_at(PROTOCOLS[0]) is None:  # e.g. a shallow clone: no history to ask
        pytest.skip("git history is not available here")
    for path in PROTOCOLS:
        p = load(path)  # refuses an unblocked_by time that is not git's
        assert p.raw["declared_utc"] == p.declared_utc == declared_at(path), path.name


def git(repo: Path, *args: str, when: str = "2030-01-02T03:04:05Z") -> None:
    env = {**os.environ, "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
    subprocess.run(["git", "-C", str(repo), *args], check=True, env=env, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    git(tmp_path, "init", "-q")
    git(tmp_path, "config", "user.email", "t@amc.invalid")
    git(tmp_path, "config", "user.name", "amc test")
    return tmp_path


def commit(repo: Path, raw: dict, when: str = "2030-01-02T03:04:05Z") -> Path:
    path = repo / "x.json"
    path.write_text(json.dumps(raw))
    git(repo, "add", "x.json")
    git(repo, "commit", "-qm", "declare", when=when)
    return path


def test_the_time_comes_from_the_commit_and_a_typed_one_is_refused(repo: Path) -> None:
    raw = json.loads(PROTOCOLS[0].read_text())
    del raw["declared_utc"]
    path = repo / "x.json"
    path.write_text(json.dumps(raw))
    assert load(path).declared_utc is None  # not committed yet: not declared
    commit(repo, raw)
    assert load(path).declared_utc == "2030-01-02T03:04:05Z"
    commit(repo, {**raw, "declared_utc": "2030-01-02T03:30Z"}, when="2030-01-03T00:00:00Z")
    with pytest.raises(ValueError, match=r"declared_utc .* git committed the file"):
        load(path)
    commit(repo, {**raw, "declared_utc": "2030-01-02T03:04:05Z",
                  "unblocked_by": "2030-01-05T00:00Z: typed"}, when="2030-01-04T00:00:00Z")
    with pytest.raises(ValueError, match=r"unblocked_by starts with .*2030-01-04T00:00:00Z"):
        load(path)
