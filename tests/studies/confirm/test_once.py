"""Once means once: a finished declared run refuses to run again unless declared a replication;
an unfinished one resumes without rewriting a kept row, under the protocol it started with."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from studies.confirm import once
from studies.confirm.protocol import load
from studies.confirm.run import main

ROOT = Path(__file__).resolve().parents[3]


def test_a_finished_run_refuses_and_a_replication_gets_its_own_folder(tmp_path: Path) -> None:
    folder = once.run_dir(tmp_path, "confirm-x")
    once.claim(folder, "confirm-x", "h1")
    once.keep_row(folder, {"task_id": "7", "seed": 0, "bon": 0.5})
    once.finish(folder, {"rows": 1})
    with pytest.raises(once.OnceError, match="--replication"):
        once.claim(folder, "confirm-x", "h1")
    rep = once.run_dir(tmp_path, "confirm-x", "r2")
    assert rep == folder / once.REPLICATIONS / "r2"
    assert once.claim(rep, "confirm-x", "h1", "r2")["replication"] == "r2"
    assert once.kept_rows(rep) == []  # the replication starts from nothing
    once.finish(rep, {"rows": 0})
    with pytest.raises(once.OnceError, match="new replication id"):
        once.claim(rep, "confirm-x", "h1", "r2")
    with pytest.raises(once.OnceError, match="replication id"):
        once.run_dir(tmp_path, "confirm-x", "../escape")


def test_an_unfinished_run_resumes_under_its_protocol_only(tmp_path: Path) -> None:
    folder = once.run_dir(tmp_path, "confirm-x")
    once.claim(folder, "confirm-x", "h1")
    once.keep_row(folder, {"task_id": "7", "seed": 0})
    assert once.claim(folder, "confirm-x", "h1")["protocol_hash"] == "h1"  # resumes
    with pytest.raises(once.OnceError, match="written once"):
        once.keep_row(folder, {"task_id": "7", "seed": 0})
    with pytest.raises(once.OnceError, match="protocol changed"):
        once.claim(folder, "confirm-x", "h2")


def test_a_torn_last_line_is_dropped_and_rerun(tmp_path: Path) -> None:
    folder = once.run_dir(tmp_path, "confirm-x")
    once.claim(folder, "confirm-x", "h1")
    once.keep_row(folder, {"task_id": "1", "seed": 0})
    with (folder / once.ROWS).open("a") as f:
        f.write('{"task_id": "2", "se')  # cut off mid-write
    assert [r["task_id"] for r in once.kept_rows(folder)] == ["1"]
    once.keep_row(folder, {"task_id": "2", "seed": 0})
    assert [r["task_id"] for r in once.kept_rows(folder)] == ["1", "2"]


def test_the_runner_refuses_a_finished_run_in_one_line(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """The command line: a finished run exits 2 with one line naming --replication, before
    it builds any environment or value."""
    proto = ROOT / "studies/confirm/sciworld.json"
    p = load(proto)
    folder = once.run_dir(tmp_path, p.id)
    once.claim(folder, p.id, p.sha256)
    once.finish(folder, {"rows": 80})
    assert main([str(proto), "--results", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "already has its result" in err[0] and "--replication" in err[0]


def test_a_blocked_protocol_refuses_with_its_reason(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    raw = json.loads((ROOT / "studies/confirm/webshop.json").read_text())
    proto = tmp_path / "webshop.json"
    proto.write_text(json.dumps({**raw, "status": "blocked", "blocked_by": "no value here"}))
    assert main([str(proto), "--results", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "blocked" in err and "no value here" in err
    assert not (tmp_path / raw["id"]).exists()


def test_the_declared_protocols_parse() -> None:
    for bench in ("sciworld", "webshop", "textcraft"):
        p = load(ROOT / f"studies/confirm/{bench}.json")
        assert p.benchmark == bench and ("amc", "bon") in p.primary
        assert p.runnable or p.blocked_by
        assert json.loads((ROOT / f"studies/confirm/{bench}.json").read_text())["analysis"]
