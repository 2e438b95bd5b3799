"""A collect killed mid-run (SIGKILL, possibly mid-write) resumes: no task lost, none twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from amc.pipeline.collect import all_tasks, collect
from amc.pipeline.params import load_params

ROOT = Path(__file__).resolve().parents[2]
PARAMS = {"env": {"name": "synthetic",
                  "options": {"n_train": 400, "depth": 5, "p_terminal": 0.0}},
          "collect": {"max_tasks": 400, "rollouts": 8, "max_concurrent_tasks": 2}}


def test_killed_collect_resumes_without_loss_or_duplicates(workdir: Path) -> None:
    Path("params.yaml").write_text(yaml.safe_dump(PARAMS))
    out = Path("data/trajectories/bon@8__seed0.jsonl")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "amc.cli", "collect", "--quiet"], env=env,
                            start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if out.exists() and out.read_bytes().count(b"\n") >= 60:
            break
        time.sleep(0.05)
    assert proc.poll() is None, f"collect ended before it could be killed: {proc.stderr.read()}"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    before = out.read_bytes()
    done_before = [json.loads(line)["task_id"] for line in before.split(b"\n")[:-1]]
    assert 60 <= len(done_before) < 400
    assert not Path("data/trajectories/manifest.json").exists()  # written only at the end

    p = load_params("params.yaml")
    res = collect(p, progress=False)  # resume in-process
    lines = out.read_text().splitlines()
    ids = [json.loads(line)["task_id"] for line in lines]
    assert sorted(ids) == sorted(all_tasks(p)) and len(ids) == len(set(ids)) == 400
    kept = set(out.read_bytes().split(b"\n"))
    assert all(line in kept for line in before.split(b"\n")[:-1])  # kept, not recomputed
    assert ids == all_tasks(p)  # in task order, whichever finished first
    assert res.complete and res.records == 400
    manifest = json.loads(Path("data/trajectories/manifest.json").read_text())
    assert manifest["complete"] and manifest["seeds"]["0"]["duplicates"] == 0
