"""The response cache: keys per server and request, persistence, refusals, masking."""

import pytest

from amc.priors.cache import ResponseCache, cache_problem, server_id
from amc.types import Usage

A = "http://127.0.0.1:8001/v1"


def test_key_covers_server_model_endpoint_request_and_seed(tmp_path):
    req = {"model": "m", "prompt": "p", "temperature": 1.0, "seed": 3}
    k = ResponseCache.key("m", "completions", req, 3, server=A)
    assert k == ResponseCache.key("m", "completions", dict(reversed(req.items())), 3, server=A)
    assert k == ResponseCache.key("m", "completions", req, 3, server="HTTP://127.0.0.1:8001/v1/")
    assert len({k, ResponseCache.key("m", "completions", req, 4, server=A),
                ResponseCache.key("m", "chat", req, 3, server=A),
                ResponseCache.key("m2", "completions", req, 3, server=A),
                ResponseCache.key("m", "completions", {**req, "temperature": 0.5}, 3, server=A),
                ResponseCache.key("m", "completions", {**req, "prompt": "q"}, 3, server=A),
                ResponseCache.key("m", "completions", req, 3, server="http://127.0.0.1:8002/v1"),
                ResponseCache.key("m", "completions", req, 3, server="http://127.0.0.1:8001/v2"),
                ResponseCache.key("m", "completions", req, 3,
                                  server="https://127.0.0.1:8001/v1")}) == 9


def test_server_id_normalises_only_what_names_the_same_server():
    assert server_id("HTTP://Host:8000/v1/") == "http://host:8000/v1"
    assert server_id("http://host:8000/V1") != server_id("http://host:8000/v1")  # paths differ
    assert server_id("embedded:gemma-3-270m@python") == "embedded:gemma-3-270m@python"


def test_roundtrip_persists_and_first_write_wins(tmp_path):
    path = tmp_path / "c.sqlite"
    c = ResponseCache(path)
    u = Usage(prompt_tokens=10, completion_tokens=2, calls=1, cost_usd=0.5)
    assert c.get("k") is None
    c.put("k", "Action: a1", u)
    c.put("k", "other", Usage())
    c.close()
    again = ResponseCache(path)
    assert again.get("k") == ("Action: a1", u) and len(again) == 1
    assert (again.hits, again.misses) == (1, 0)


def test_an_unusable_cache_never_fails_a_call(tmp_path):
    c = ResponseCache(tmp_path / "c.sqlite")
    assert not (tmp_path / "c.sqlite").exists()  # made at the first call, not when built
    assert len(c) == 0 and (tmp_path / "c.sqlite").is_file()
    c._db.close()  # e.g. the file vanished or another process broke it
    c.put("k", "x", Usage())
    assert c.get("k") is None


def test_a_path_that_cannot_hold_the_database_is_named_before_anything_is_written(tmp_path):
    (tmp_path / "dir").mkdir()
    (tmp_path / "text").write_text("hello\n")
    (tmp_path / "random.bin").write_bytes(bytes(range(256)) * 8)
    assert "is a folder" in str(cache_problem(tmp_path / "dir"))
    assert "not an SQLite database" in str(cache_problem(tmp_path / "text"))
    assert "not an SQLite database" in str(cache_problem(tmp_path / "random.bin"))
    assert "not a folder" in str(cache_problem(tmp_path / "text" / "c.sqlite"))
    assert "cannot create" in str(cache_problem("/proc/amc-nope/c.sqlite"))
    before = sorted(tmp_path.rglob("*"))
    with pytest.raises(ValueError, match=r"response cache: .*random\.bin.* not an SQLite"):
        ResponseCache(tmp_path / "random.bin")
    assert sorted(tmp_path.rglob("*")) == before
    assert cache_problem(tmp_path / "new" / "c.sqlite") is None  # a new file is fine
    good = ResponseCache(tmp_path / "ok.sqlite")
    good.close()
    assert cache_problem(tmp_path / "ok.sqlite") is None  # and so is an existing database


def test_a_stored_answer_never_holds_the_key(tmp_path, monkeypatch):
    key = "canary-0123456789abcdef"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    cache = ResponseCache(tmp_path / "c.sqlite")
    cache.put("k", f"Action: look. Authorization: Bearer {key} ({key})", Usage())
    assert cache.get("k")[0] == "Action: look. Authorization: Bearer *** (***)"
    cache.close()
    assert not any(key.encode() in p.read_bytes() for p in tmp_path.iterdir())
