"""Crash-safe JSON lines: torn tails, atomic writes."""

import json

import pytest

from amc.results import (
    append_jsonl,
    read_jsonl,
    record_session,
    repair_tail,
    results_path,
    sessions_wall,
    write_json_atomic,
)


def test_append_read_and_torn_tail(tmp_path):
    p = tmp_path / "r.jsonl"
    append_jsonl(p, {"task_id": "1"})
    append_jsonl(p, {"task_id": "2"})
    with open(p, "a") as f:
        f.write('{"task_id": "3", "tru')  # killed mid-write
    assert [r["task_id"] for r in read_jsonl(p)] == ["1", "2"]
    repair_tail(p)
    append_jsonl(p, {"task_id": "3"})
    assert [r["task_id"] for r in read_jsonl(p)] == ["1", "2", "3"]


def test_corrupt_middle_line_is_an_error(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_text('{"a": 1}\nnot json\n{"a": 2}\n')
    with pytest.raises(ValueError, match=":2"):
        list(read_jsonl(p))


def test_atomic_json_and_paths(tmp_path):
    write_json_atomic(tmp_path / "x" / "s.json", {"b": 1})
    assert json.loads((tmp_path / "x" / "s.json").read_text()) == {"b": 1}
    assert not list((tmp_path / "x").glob(".*tmp"))
    assert results_path(tmp_path, "smc@8+learned", 2).name == "smc@8+learned__seed2.jsonl"
    assert results_path(tmp_path, "a/b c", 0).name == "a_b_c__seed0.jsonl"


def test_sessions_add_up_across_sittings(tmp_path):
    assert sessions_wall(tmp_path) == (0.0, 0)
    t = __import__("time").time()
    record_session(tmp_path, t - 60.0, "failed")  # an interrupted sitting still counts
    record_session(tmp_path, t - 30.0, "finished")
    wall, n = sessions_wall(tmp_path)
    assert n == 2 and 90.0 <= wall < 95.0
