"""Crash-safe JSON lines: torn tails, atomic writes."""

import json
import os
import stat

import pytest

from amc.results import (
    OutputInUse,
    append_jsonl,
    check_writable,
    failures_path,
    folder_problem,
    iter_jsonl,
    lock_outputs,
    read_jsonl,
    record_session,
    repair_tail,
    results_path,
    sessions_wall,
    write_json_atomic,
    write_jsonl_atomic,
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


def test_lines_that_are_not_objects_name_file_and_line(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_text('{"a": 1}\n\n"text"\n')
    with pytest.raises(ValueError, match=r"r.jsonl:3: results line is a str, not an object"):
        list(read_jsonl(p))
    p.write_text('{"a": 1}\n\n{"a": 2}\n')
    assert [n for n, _ in iter_jsonl(p)] == [1, 3]  # line numbers count blank lines


def test_failures_file_sits_next_to_the_results(tmp_path):
    assert failures_path(tmp_path, "smc@8+zs", 1) == tmp_path / "smc@8+zs__seed1.failures.jsonl"


def test_output_lock_is_exclusive_and_released(tmp_path):
    a, b = results_path(tmp_path, "react", 0), results_path(tmp_path, "bon", 0)
    with lock_outputs([a]):
        busy = r"react__seed0.jsonl is being written by pid \d+"
        with pytest.raises(OutputInUse, match=busy), lock_outputs([b, a]):
            pass
        with lock_outputs([b]):  # other files stay free, b's partial lock was undone
            pass
    with lock_outputs([a, b]):  # released on exit
        assert len(list(tmp_path.glob(".*.lock"))) == 2
    assert not list(tmp_path.glob(".*.lock"))  # no litter in (DVC-tracked) output folders


def test_unwritable_out_is_a_one_line_error(tmp_path):
    (tmp_path / "f").write_text("x")
    assert check_writable(tmp_path / "new" / "dir").is_dir()
    with pytest.raises(ValueError, match=r"^cannot write results to .*f/out: "):
        check_writable(tmp_path / "f" / "out")


@pytest.mark.parametrize("mask", [0o022, 0o002, 0o077])
def test_atomic_writes_get_the_users_umask_not_mkstemps_0600(tmp_path, mask):
    from amc.results import current_umask

    old = os.umask(mask)
    try:
        assert current_umask() == mask
        write_json_atomic(tmp_path / "evaluation.json", {"a": 1})
        plain = tmp_path / "plain.json"
        plain.write_text("{}")  # what open() gives, the reference
    finally:
        os.umask(old)
    got = stat.S_IMODE((tmp_path / "evaluation.json").stat().st_mode)
    assert got == stat.S_IMODE(plain.stat().st_mode) == 0o666 & ~mask


def test_a_line_that_is_not_utf8_names_file_line_and_what_to_do(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_bytes(b"\x89PNG\xff\n" + b'{"task_id": "0"}\n')
    with pytest.raises(ValueError, match=r"r\.jsonl:1: corrupt results line \(not UTF-8 text\); "
                                         r"the file is damaged: delete that line"):
        list(iter_jsonl(p))
    p.write_bytes(b'{"task_id": "0"}\n\xff\xfe')  # a torn last line may hold anything
    assert [r["task_id"] for r in read_jsonl(p)] == ["0"]


def test_every_json_writer_masks_known_keys_and_echoed_headers(tmp_path, monkeypatch):
    key = "canary-0123456789abcdef"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    echo = {"text": f"Authorization: Bearer {key}", "raw": key, "other": "api-key: zz-9876543210"}
    append_jsonl(tmp_path / "a.jsonl", echo)
    write_json_atomic(tmp_path / "b.json", echo)
    write_jsonl_atomic(tmp_path / "c.jsonl", [echo])
    for name in ("a.jsonl", "b.json", "c.jsonl"):
        text = (tmp_path / name).read_text()
        assert key not in text and "zz-9876543210" not in text, name
        rec = json.loads(text.splitlines()[0] if name != "b.json" else text)
        assert rec == {"text": "Authorization: Bearer ***", "raw": "***", "other": "api-key: ***"}


def test_folder_problem_tries_and_leaves_nothing(tmp_path):
    (tmp_path / "f").write_text("x")
    assert folder_problem(tmp_path / "new" / "deeper") is None
    assert list(tmp_path.iterdir()) == [tmp_path / "f"]  # created, proved, removed
    assert "not a folder" in str(folder_problem(tmp_path / "f" / "sub"))
    assert folder_problem(tmp_path / ("x" * 300)) == "File name too long"
    assert folder_problem("/proc/amc-nope") is not None
    assert list(tmp_path.iterdir()) == [tmp_path / "f"]


def test_every_writer_writes_strict_json(tmp_path) -> None:
    """Issue 63: ``"mde": NaN`` in decision.json; strict parsers refuse NaN and Infinity."""
    import math

    from amc.results import append_jsonl, write_json_atomic, write_jsonl_atomic

    def refuse(token: str) -> None:
        raise ValueError(f"not strict JSON: {token}")

    rec = {"mde": math.nan, "hi": [math.inf, -math.inf, 1.5], "n": {"x": (math.nan, 2)}}
    want = {"mde": None, "hi": [None, None, 1.5], "n": {"x": [None, 2]}}
    write_json_atomic(tmp_path / "a.json", rec)
    write_jsonl_atomic(tmp_path / "b.jsonl", [rec])
    append_jsonl(tmp_path / "c.jsonl", rec)
    for name in ("a.json", "b.jsonl", "c.jsonl"):
        text = (tmp_path / name).read_text()
        assert json.loads(text, parse_constant=refuse) == want, name

    from amc.smc.scoring import upgrade_metric_keys

    write_json_atomic(tmp_path / "m.json", {"success": math.nan, "success_se": 0.1})
    back = upgrade_metric_keys(json.loads((tmp_path / "m.json").read_text()))
    assert math.isnan(back["success"]) and back["success_se"] == 0.1  # unmeasured reads as NaN
