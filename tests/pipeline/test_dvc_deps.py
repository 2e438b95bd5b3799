"""dvc.yaml as DVC reads it: one ``python -m amc.pipeline.<stage>`` per stage, and code deps that
make ``dvc status`` see an edit of the code a stage really uses (and only that).

The lock is made by ``dvc commit`` over placeholder outputs (no stage runs): what is tested is
the stage graph's declared dependencies, in seconds.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
STAGES = ("collect", "dataset", "train", "evaluate", "promote", "report")


def dvc(root: Path, *args: str) -> str:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "DVC_NO_ANALYTICS": "1"}
    proc = subprocess.run(["dvc", *args], cwd=root, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, f"dvc {args}: {proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    return proc.stdout


@pytest.fixture(scope="module")
def locked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the project whose dvc.lock records every stage (placeholder outputs)."""
    root = tmp_path_factory.mktemp("dvc-deps")
    shutil.copytree(ROOT / "amc", root / "amc", ignore=shutil.ignore_patterns("__pycache__"))
    for f in ("dvc.yaml", "params.yaml"):
        shutil.copy(ROOT / f, root / f)
    spec = yaml.safe_load((root / "dvc.yaml").read_text())
    for stage in spec["stages"].values():
        for entry in [*stage.get("outs", []), *stage.get("metrics", [])]:
            path = root / (entry if isinstance(entry, str) else next(iter(entry)))
            if path.suffix:  # a file output
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text("{}\n")
            else:
                path.mkdir(parents=True, exist_ok=True)
                (path / "placeholder").write_text("x\n")
    dvc(root, "init", "--no-scm", "-q")
    dvc(root, "commit", "-f", "-q")
    assert json.loads(dvc(root, "status", "--json")) == {}
    return root


def changed_after_edit(root: Path, rel: str) -> set[str]:
    """Stages ``dvc status`` reports changed after appending a comment to ``rel``."""
    path = root / rel
    before = path.read_bytes()
    path.write_bytes(before + b"\n# edited\n")
    try:
        return set(json.loads(dvc(root, "status", "--json")))
    finally:
        path.write_bytes(before)


def test_every_stage_runs_its_module_run_function() -> None:
    spec = yaml.safe_load((ROOT / "dvc.yaml").read_text())
    assert tuple(spec["stages"]) == STAGES
    for name, stage in spec["stages"].items():
        assert stage["cmd"] == f"python -m amc.pipeline.{name}"  # no templated flags
        assert callable(importlib.import_module(f"amc.pipeline.{name}").run)
        assert f"amc/pipeline/{name}.py" in stage["deps"]


SLOW = pytest.mark.slow  # each case is one more `dvc status` (seconds on a loaded machine)


@pytest.mark.parametrize(("edited", "stages"), [
    ("amc/smc/sampler.py", {"collect", "evaluate"}),
    pytest.param("amc/runner.py", {"collect", "evaluate"}, marks=SLOW),
    pytest.param("amc/envs/textcraft/env.py", {"collect", "evaluate"}, marks=SLOW),
    pytest.param("amc/priors/embedded.py", {"collect", "evaluate"}, marks=SLOW),
    # promote scores prior states with both models (its calibration guard)
    ("amc/value/train.py", {"train", "evaluate", "promote", "report"}),
    pytest.param("amc/value/model.py", {"train", "evaluate", "promote", "report"}, marks=SLOW),
    pytest.param("amc/value/data.py", {"dataset", "train", "evaluate", "promote", "report"},
                 marks=SLOW),
    pytest.param("amc/smc/scoring.py", {"collect", "evaluate", "promote"}, marks=SLOW),
    ("amc/pipeline/report.py", {"report"}),
    ("amc/pipeline/gate_stats.py", {"promote"}),
])
def test_editing_code_makes_the_stages_using_it_stale(locked: Path, edited: str,
                                                      stages: set[str]) -> None:
    assert changed_after_edit(locked, edited) == stages


def test_a_param_change_makes_only_its_stage_stale(locked: Path) -> None:
    path = locked / "params.yaml"
    before = path.read_text()
    data = yaml.safe_load(before)
    data["train"]["lr"] = 1e-4
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    try:
        assert set(json.loads(dvc(locked, "status", "--json"))) == {"train"}
    finally:
        path.write_text(before)
