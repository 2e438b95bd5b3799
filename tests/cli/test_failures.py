"""`amc run` against a fault-injecting OpenAI-compatible server: failures are not results.

The prior is the real OpenAI prior talking HTTP to the loopback toy server (the one boundary
mocked); environment, driver, runner, results files and CLI are the real ones. The toy model's
answer is a pure function of (prompt, request seed), so a run that survived faults must equal a
clean run task by task.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from amc.cli import app
from amc.results import failures_path, read_jsonl, results_path
from tests.priors.loopback import Faults, LoopbackServer

runner = CliRunner()
TASKS = 4


def run(srv: LoopbackServer, out: Path, *extra: str, methods: str = "react,bon@2"):
    """`amc run` with the openai prior on ``srv`` (synthetic tree, toy size)."""
    args = ["run", "--env", "synthetic", "--prior", "openai", "--model", "toy",
            "-S", f"prior.options.base_url={srv.url}", "-S", "prior.options.prompt=menu",
            "-S", "prior.options.max_retries=2", "-S", "prior.options.backoff_base_s=0.01",
            "-S", "prior.options.backoff_max_s=0.05", "-S", "prior.options.timeout_s=2",
            "-m", methods, "--steps", "3", "--max-tasks", str(TASKS), "--quiet",
            "--out", str(out), *extra]
    return runner.invoke(app, args)


def metrics(out: Path, method: str) -> dict[str, dict]:
    return {r["task_id"]: r["metrics"] for r in read_jsonl(results_path(out, method, 0))}


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("AMC_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory):
    """Reference results of a clean server (no cache, so nothing is shared with other runs)."""
    out = tmp_path_factory.mktemp("clean")
    with LoopbackServer() as srv:
        r = run(srv, out, "-S", "prior.options.cache=false")
    assert r.exit_code == 0, r.output
    return {m: metrics(out, m) for m in ("react", "bon@2")}


def test_a_401_is_recorded_as_failures_and_the_fixed_rerun_completes(tmp_path, monkeypatch,
                                                                     clean_run):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-expired-0123456789")
    with LoopbackServer(require_key="sk-fresh-key") as srv:
        r = run(srv, tmp_path)
        assert r.exit_code == 1, r.output  # not 0 (silent zeros), not 2 (bad input)
        assert "8 of 8 tasks failed" in r.output and "authentication failed (401)" in r.output
        for m in ("react", "bon@2"):
            assert list(read_jsonl(results_path(tmp_path, m, 0))) == []  # zeros are no result
            fails = list(read_jsonl(failures_path(tmp_path, m, 0)))
            assert sorted(f["task_id"] for f in fails) == [str(i) for i in range(TASKS)]
            assert all("authentication failed (401)" in f["error"] for f in fails)
        summary = json.loads((tmp_path / "summary.json").read_text())
        assert summary["failed_tasks"] == 8
        assert {row["method"]: row["failed"] for row in summary["methods"]} == {
            "react": TASKS, "bon@2": TASKS}
        assert "0123456789" not in r.output + json.dumps(summary)

        monkeypatch.setenv("OPENAI_API_KEY", "sk-fresh-key")  # the user fixes the key
        before = srv.counts["requests"]
        r = run(srv, tmp_path)
        assert r.exit_code == 0, r.output
        assert srv.counts["requests"] > before  # the failed tasks really ran again
    for m in ("react", "bon@2"):
        assert metrics(tmp_path, m) == clean_run[m]
        assert not failures_path(tmp_path, m, 0).exists()


def test_an_outage_longer_than_the_retries_fails_tasks_and_a_rerun_recovers(tmp_path,
                                                                           clean_run):
    # 503 for 1 s from the first request; 2 retries of <= 0.05 s cannot outlast it
    with LoopbackServer(faults=Faults(outage_s=1.0)) as srv:
        r = run(srv, tmp_path)
        assert r.exit_code == 1 and "gave up after 2 retries" in r.output, r.output
        assert srv.counts["outage"] > 0
        n_failed = sum(len(list(read_jsonl(failures_path(tmp_path, m, 0))))
                       for m in ("react", "bon@2"))
        n_done = sum(len(metrics(tmp_path, m)) for m in ("react", "bon@2"))
        assert n_failed >= 1 and n_failed + n_done == 2 * TASKS
        for m in ("react", "bon@2"):  # what did finish is what a clean run gives
            assert all(clean_run[m][t] == v for t, v in metrics(tmp_path, m).items())
        time.sleep(1.0)  # the outage ends (not a timing assertion: the window must pass)
        r = run(srv, tmp_path)
    assert r.exit_code == 0, r.output
    for m in ("react", "bon@2"):
        assert metrics(tmp_path, m) == clean_run[m]
        ids = [x["task_id"] for x in read_jsonl(results_path(tmp_path, m, 0))]
        assert len(ids) == len(set(ids)) == TASKS  # none lost, none twice


def test_damaged_answers_and_transient_faults_leave_results_identical(tmp_path, clean_run):
    faults = Faults(rate_429=0.05, rate_500=0.05, rate_drop=0.05, rate_truncated=0.05,
                    rate_empty=0.05, rate_null=0.05, seed=3)
    with LoopbackServer(faults=faults) as srv:
        r = run(srv, tmp_path, "-S", "prior.options.max_retries=8")
        injected = sum(srv.counts[k] for k in ("429", "500", "drop", "truncated", "empty",
                                              "null"))
    assert r.exit_code == 0, r.output
    assert injected >= 3
    for m in ("react", "bon@2"):
        assert metrics(tmp_path, m) == clean_run[m]


def test_costs_do_not_depend_on_which_methods_ran_before(tmp_path, clean_run):
    """bon@2's first particle makes react's calls; react alone must cost the same."""
    with LoopbackServer() as srv:
        assert run(srv, tmp_path / "both", methods="bon@2,react").exit_code == 0
        alone = ["-S", f"prior.options.cache_path={tmp_path}/other.sqlite"]
        assert run(srv, tmp_path / "alone", *alone, methods="react").exit_code == 0

    def tokens(out: Path) -> dict[str, int]:
        return {r["task_id"]: r["usage"]["prompt_tokens"] + r["usage"]["completion_tokens"]
                for r in read_jsonl(results_path(out, "react", 0))}

    alone = tokens(tmp_path / "alone")
    assert tokens(tmp_path / "both") == alone and min(alone.values()) > 0
