"""`amc collect` / `amc evaluate` killed with SIGKILL at a random moment, then rerun: no task is
lost and none is written twice.

Only the command line is used (``-p`` params file, ``-S`` overrides), in a temporary folder
with its own params and MLflow store; the kill lands after a seeded random number of finished
tasks, possibly in the middle of a write.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
N_TASKS = 60
PARAMS = {
    "env": {"name": "synthetic",
            "options": {"n_train": N_TASKS, "n_test": N_TASKS, "depth": 5, "p_terminal": 0.0}},
    "prior": {"name": "synthetic", "options": {}},
    "smc": {"max_steps": 5, "beta": 0.5, "resample": "fixed", "resample_steps": [1, 2]},
    "collect": {"max_tasks": N_TASKS, "rollouts": 8, "max_concurrent_tasks": 2},
    "evaluate": {"max_tasks": N_TASKS, "methods": ["bon", "smc"], "n_grid": [8], "seeds": [0],
                 "zero_shot_value": {"name": "exact"}, "max_concurrent_tasks": 2,
                 "compare_champion": False},
}
STAGES = {  # command -> (results files, check of the finished stage)
    "collect": (["data/trajectories/bon@8__seed0.jsonl"],
                lambda: json.loads(Path("data/trajectories/manifest.json").read_text())
                ["complete"]),
    "evaluate": (["data/eval/bon@8__seed0.jsonl", "data/eval/smc@8__seed0.jsonl"],
                 lambda: json.loads(Path("metrics/eval.json").read_text())["complete"] == 1),
}


def lines(files: list[str]) -> int:
    return sum(Path(f).read_bytes().count(b"\n") for f in files if Path(f).exists())


def amc(cmd: str, env: dict[str, str]) -> subprocess.Popen:
    # No -S overrides: an overridden run writes to its own runs/overrides-<hash>/ folder.
    return subprocess.Popen([sys.executable, "-m", "amc.cli", cmd, "-p", "params.yaml",
                             "--quiet"], env=env,
                            start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)


@pytest.mark.slow
@pytest.mark.parametrize("cmd,seed", [("collect", 1), ("evaluate", 2)])
def test_killed_stage_reruns_without_loss_or_duplicates(cmd, seed, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("params.yaml").write_text(yaml.safe_dump(PARAMS))
    env = {**os.environ, "PYTHONPATH": str(ROOT),
           "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path}/mlruns/mlflow.db"}
    files, finished = STAGES[cmd]
    kill_at = int(np.random.default_rng(seed).integers(10, N_TASKS // 2))  # finished tasks
    proc = amc(cmd, env)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None and lines(files) < kill_at:
        time.sleep(0.01)
    assert proc.poll() is None, f"{cmd} ended before it could be killed: {proc.stderr.read()}"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    before = {f: Path(f).read_bytes() for f in files if Path(f).exists()}
    assert 0 < lines(files) < len(files) * N_TASKS

    again = amc(cmd, env)
    _, err = again.communicate(timeout=600)
    assert again.returncode == 0, err.decode()[-2000:]
    for f in files:
        ids = [json.loads(x)["task_id"] for x in Path(f).read_text().splitlines()]
        assert len(ids) == len(set(ids)) == N_TASKS, f  # none lost, none twice
        kept = before.get(f, b"").split(b"\n")[:-1]  # complete lines written before the kill
        assert ids[: len(kept)] == [json.loads(x)["task_id"] for x in kept]  # not recomputed
    assert finished()
