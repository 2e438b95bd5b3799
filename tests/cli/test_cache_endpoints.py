"""The response cache answers only for the server that gave the answers.

One `amc run` against a loopback OpenAI-compatible server fills the cache; the same run
pointed at a dead endpoint, then at one that refuses the key (401), must fail (exit 1, every
task in the failures file, no results), never replay the first server's answers. Pointed back
at the first server, the run is answered from the cache without a call.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from amc.ports import free_port
from amc.results import failures_path, read_jsonl, results_path
from tests.cli.test_failures import TASKS, run
from tests.priors.loopback import LoopbackServer


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("AMC_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)


class _Endpoint:
    """A server address for :func:`tests.cli.test_failures.run` (only ``url`` is read)."""

    def __init__(self, url: str) -> None:
        self.url = url


def _all_failed(out: Path, r) -> None:
    assert r.exit_code == 1, r.output
    assert "error:" in r.output and "Traceback" not in r.output
    for m in ("react", "bon@2"):
        assert list(read_jsonl(results_path(out, m, 0))) == []
        failed = list(read_jsonl(failures_path(out, m, 0)))
        assert sorted(f["task_id"] for f in failed) == [str(i) for i in range(TASKS)]


def test_a_dead_or_refusing_endpoint_fails_instead_of_replaying_another_servers_answers(
        tmp_path):
    with LoopbackServer() as srv:
        first = run(srv, tmp_path / "first")
        calls = srv.counts["requests"]
        assert first.exit_code == 0 and calls > 0, first.output
        again = run(srv, tmp_path / "again")  # same server, same seeds: all from the cache
        assert again.exit_code == 0 and srv.counts["requests"] == calls, again.output
    for m in ("react", "bon@2"):
        assert len(list(read_jsonl(results_path(tmp_path / "again", m, 0)))) == TASKS

    dead = _Endpoint(f"http://127.0.0.1:{free_port()}/v1")  # nothing listens there
    _all_failed(tmp_path / "dead", run(dead, tmp_path / "dead"))
    with LoopbackServer(require_key="sk-not-ours") as refusing:
        r = run(refusing, tmp_path / "refusing")
        assert refusing.counts["401"] >= 1
    _all_failed(tmp_path / "refusing", r)
    assert "authentication failed (401)" in r.output
