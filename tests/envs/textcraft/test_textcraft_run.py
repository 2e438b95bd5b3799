"""`amc run` end to end on TextCraft, in process and through `amc serve-env` over HTTP."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from amc.cli import app

runner = CliRunner()
ARGS = ["run", "--prior", "random-valid", "-m", "react,smc@4", "--steps", "8",
        "--resample-steps", "2", "--max-tasks", "3", "--quiet"]


def summary(out) -> dict:
    return {row["method"]: row for row in json.loads((out / "summary.json").read_text())["methods"]}


def test_run_textcraft_offline(tmp_path) -> None:
    r = runner.invoke(app, [*ARGS, "--env", "textcraft", "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert set(summary(tmp_path)) == {"react", "smc@4"}


@pytest.mark.slow
def test_run_through_agentgym_server_matches_in_process(tmp_path, textcraft_server: str) -> None:
    local, remote = tmp_path / "local", tmp_path / "remote"
    assert runner.invoke(app, [*ARGS, "--env", "textcraft", "--out", str(local)]).exit_code == 0
    r = runner.invoke(app, [*ARGS, "--env", "agentgym", "--out", str(remote),
                            "-S", f"env.options.base_url={textcraft_server}"])
    assert r.exit_code == 0, r.output
    # same tasks, seeds and per-particle generators: identical trajectories
    for m in ("react", "smc@4"):
        assert runs(local / f"{m}__seed0.jsonl") == runs(remote / f"{m}__seed0.jsonl")


def runs(path) -> dict:
    """task id -> the (action, observation, reward) sequences of its trajectories."""
    out = {}
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        out[rec["task_id"]] = [
            [(s["action"], s["observation"], s["reward"]) for s in t["steps"]]
            for t in rec["trajectories"]
        ]
    return out
