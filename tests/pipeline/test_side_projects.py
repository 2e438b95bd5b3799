"""The side pipelines (grpo/, sweeps/) are DVC projects of their own, out of the root's view.

A copy of the repository's DVC files (the root pipeline, both side projects with their
committed ``.dvc/config`` and ``dvc.lock``) in a temp git repository: the root's ``dvc status``
and ``dvc metrics show`` never mention them (before this, a fresh clone's ``dvc status`` listed
~30 lines of stages ``make run`` never runs and ``dvc checkout`` failed on sweeps/models/value),
while each side project still lists its own stages.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FILES = ("dvc.yaml", "params.yaml", ".dvcignore", "grpo/dvc.yaml", "grpo/.dvc/config",
         "grpo/.dvc/.gitignore", "grpo/.dvcignore", "sweeps/dvc.yaml", "sweeps/dvc.lock",
         "sweeps/params.yaml", "sweeps/.dvc/config", "sweeps/.dvc/.gitignore",
         "sweeps/.dvcignore")


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("side-projects")
    for f in FILES:
        (root / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / f, root / f)
    for cmd in (["git", "init", "-q"], ["dvc", "init", "-q"],
                ["dvc", "config", "core.analytics", "false"]):
        _sh(root, *cmd)
    return root


def _sh(cwd: Path, *args: str) -> str:
    env = {**os.environ, "DVC_NO_ANALYTICS": "1",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    p = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, f"{args}: {p.stdout[-2000:]}\n{p.stderr[-2000:]}"
    return p.stdout + p.stderr


def test_root_status_and_metrics_never_see_the_side_pipelines(repo: Path) -> None:
    status = _sh(repo, "dvc", "status")
    assert "collect:" in status  # the root pipeline (not run here) is listed ...
    assert "grpo" not in status and "sweeps" not in status  # ... the side ones are not
    stages = _sh(repo, "dvc", "stage", "list")
    assert "collect" in stages and "grpo" not in stages and "cell" not in stages


def test_each_side_project_lists_its_own_stages(repo: Path) -> None:
    assert "grpo" in _sh(repo, "dvc", "--cd", "grpo", "stage", "list")
    sweeps = _sh(repo / "sweeps", "dvc", "stage", "list")
    assert "value" in sweeps and "cell" in sweeps and "collect" not in sweeps
