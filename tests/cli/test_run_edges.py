"""Crash and concurrency edges of `amc run`: locks, unusable outputs, damaged results files,
default output folders, value names, registry look-ups and thread-safe component building."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from amc.cli import app
from amc.config import load_run_config
from amc.registry import PRIORS, VALUES
from amc.results import lock_outputs, read_jsonl, results_path
from amc.runner import build_components, resolve_methods
from tests.cli.test_failures import run as run_openai
from tests.priors.loopback import LoopbackServer

runner = CliRunner()
ARGS = ["run", "--env", "synthetic", "--value", "exact", "-n", "4", "--steps", "3",
        "--beta", "0.5", "--resample-steps", "1,2", "--max-tasks", "3", "--quiet"]


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("AMC_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)


def test_a_second_run_on_the_same_out_is_refused_while_the_first_holds_it(tmp_path):
    held = results_path(tmp_path, "smc", 0)
    with lock_outputs([held]):  # a real flock, as another `amc run` process holds it
        r = runner.invoke(app, [*ARGS, "-m", "react,smc", "--out", str(tmp_path)])
        assert r.exit_code == 2 and "is being written by pid" in r.output, r.output
        assert not held.exists() and not results_path(tmp_path, "react", 0).exists()
    r = runner.invoke(app, [*ARGS, "-m", "react,smc", "--out", str(tmp_path)])  # released
    assert r.exit_code == 0, r.output
    assert len(list(read_jsonl(held))) == 3


def test_an_unusable_out_fails_before_any_call(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with LoopbackServer() as srv:
        r = run_openai(srv, blocker / "out")
        assert r.exit_code == 2 and "cannot write results to" in r.output, r.output
        assert "Traceback" not in r.output and srv.counts["requests"] == 0


def test_damaged_results_lines_name_file_and_line(tmp_path):
    out = ["--out", str(tmp_path), "-m", "smc"]
    assert runner.invoke(app, [*ARGS, *out]).exit_code == 0
    f = results_path(tmp_path, "smc", 0)
    lines = f.read_text().splitlines()
    rec = json.loads(lines[1])
    del rec["metrics"]
    f.write_text("\n".join([lines[0], json.dumps(rec), lines[2]]) + "\n")
    r = runner.invoke(app, [*ARGS, *out])
    assert r.exit_code == 2 and f"{f}:2: bad results record (missing field 'metrics')" in r.output
    f.write_text("\n".join([lines[0], "[1, 2]", lines[2]]) + "\n")
    r = runner.invoke(app, [*ARGS, *out])
    assert r.exit_code == 2 and f"{f}:2: results line is a list, not an object" in r.output
    assert "Traceback" not in r.output


def test_the_default_out_is_one_folder_per_configuration(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert runner.invoke(app, [*ARGS, "-m", "smc"]).exit_code == 0
    r = runner.invoke(app, [*ARGS, "-m", "smc", "--beta", "0.7"])  # a changed flag
    assert r.exit_code == 0, r.output
    folders = sorted(p.name for p in (tmp_path / "runs").iterdir())
    assert len(folders) == 2 and all(f.startswith("synthetic-") for f in folders)
    assert runner.invoke(app, [*ARGS, "-m", "smc,react"]).exit_code == 0  # same config again
    assert len(list((tmp_path / "runs").iterdir())) == 2
    assert f"results: runs/{folders[0]}" in r.output or f"results: runs/{folders[1]}" in r.output


def test_plus_name_finds_the_default_value_by_its_registry_name(tmp_path):
    r = runner.invoke(app, [*ARGS, "-m", "smc@4+exact", "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    cfg = load_run_config(None, ["value.name=exact", "methods=[smc+exact, smc]"])
    plus, plain = resolve_methods(cfg)
    assert plus.value == plain.value and plus.value.name == "exact"
    bad = load_run_config(None, ["methods=[smc+nope]"])
    with pytest.raises(ValueError, match=r"unknown value 'nope' \(values: none\)"):
        resolve_methods(bad)


def test_a_models_uri_without_a_store_is_one_line_and_creates_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, [*ARGS, "--value", "models:/amc-value-synthetic@champion",
                            "-m", "smc@2+learned", "--out", str(tmp_path / "out")])
    assert r.exit_code == 2 and "no MLflow store at mlruns/mlflow.db" in r.output, r.output
    assert not (tmp_path / "mlruns").exists()


class _Probe:
    """Counts factories running at once (a stand-in for a first `import transformers`)."""

    lock = threading.Lock()
    active = peak = 0


@VALUES.register("test-build-probe")
def _probe_value(**context: object):
    """Test value whose factory records overlapping builds."""
    with _Probe.lock:
        _Probe.active += 1
        _Probe.peak = max(_Probe.peak, _Probe.active)
    time.sleep(0.2)  # long enough for a second thread to enter, were it allowed
    with _Probe.lock:
        _Probe.active -= 1
    return VALUES.build("exact", None, **context)


def test_components_are_built_one_thread_at_a_time():
    cfg = load_run_config(None, ["value.name=test-build-probe", "methods=[smc]"])
    methods = resolve_methods(cfg)
    built = []
    threads = [threading.Thread(target=lambda: built.append(build_components(cfg, methods)))
               for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(built) == 3 and _Probe.peak == 1
    for c in built:
        c.suite.close()


def test_paper_configs_report_replayed_usage():
    root = Path(__file__).resolve().parents[2] / "configs"
    paths = sorted(root.glob("paper-*.yaml"))
    assert len(paths) == 3
    for path in paths:
        cfg = load_run_config(path)
        assert PRIORS.validate(cfg.prior.name, cfg.prior.options).cache_replays_usage, path.name


def test_failed_records_of_older_versions_are_rerun_not_kept(tmp_path):
    out = ["--out", str(tmp_path), "-m", "smc"]
    assert runner.invoke(app, [*ARGS, *out]).exit_code == 0
    f = results_path(tmp_path, "smc", 0)
    recs = [json.loads(x) for x in f.read_text().splitlines()]
    good = recs[1]["metrics"]
    recs[1]["failures"] = [{"t": 1, "particle": 0, "error": "authentication failed (401)"}]
    recs[1]["metrics"] = {**good, "max_weight_reward": 0.0}  # the damaged score it came with
    f.write_text("".join(json.dumps(r) + "\n" for r in recs))
    assert runner.invoke(app, [*ARGS, *out]).exit_code == 0
    again = list(read_jsonl(f))
    assert sorted(r["task_id"] for r in again) == ["0", "1", "2"]  # rerun once, not twice
    redone = next(r for r in again if r["task_id"] == recs[1]["task_id"])
    assert redone["failures"] == [] and redone["metrics"] == good
