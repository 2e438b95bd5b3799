"""`python -m studies.sweeps.kept` on a real DVC project: a value stage's model kept, the folder and
the DVC cache lost (a fresh clone), restored into the cache so the stage is not rerun."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

MAKE_VALUE = """
from pathlib import Path
from tests.studies.sweeps.test_keep_value import saved_value
saved_value(Path("models/value"), seed=int(open("seed.txt").read()))
"""


def run(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "DVC_NO_ANALYTICS": "1",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.run(list(args), cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)
    assert not check or proc.returncode == 0, f"{args}: {proc.stdout}\n{proc.stderr}"
    return proc


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git + DVC project with the sweeps' params and one stage `value` that writes a
    head-mode value to models/value, reproduced, committed and kept."""
    root = tmp_path_factory.mktemp("kept-project")
    shutil.copy(REPO / "sweeps" / "params.yaml", root / "params.yaml")
    (root / "make_value.py").write_text(MAKE_VALUE)
    (root / "seed.txt").write_text("5")
    (root / "dvc.yaml").write_text(
        "stages:\n  value:\n    cmd: python make_value.py\n    deps: [make_value.py, seed.txt]\n"
        "    outs: [models/value]\n")
    for cmd in (["git", "init", "-q"], ["git", "config", "user.email", "t@t.invalid"],
                ["git", "config", "user.name", "t"], ["dvc", "init", "-q"],
                ["dvc", "repro", "-q"], ["git", "add", "-A"],
                ["git", "commit", "-qm", "value"]):
        run(root, *cmd)
    kept = run(root, sys.executable, "-m", "studies.sweeps.kept", "keep")
    assert "kept models/value as kept/value" in kept.stdout
    return root


def test_a_fresh_clone_restores_the_kept_value_into_the_cache_and_the_stage_is_not_rerun(
        project: Path):
    from studies.sweeps.keep_value import file_hashes

    before = file_hashes(project / "models" / "value")
    # a fresh clone: no model folder, an empty cache
    shutil.rmtree(project / "models" / "value")
    shutil.rmtree(project / ".dvc" / "cache")
    assert "not in cache" in run(project, "dvc", "status", "value").stdout
    out = run(project, sys.executable, "-m", "studies.sweeps.kept", "restore")
    assert "restored from kept/value" in out.stdout
    assert file_hashes(project / "models" / "value") == before
    # in the cache: a checkout after losing the folder again brings it back, and repro skips
    shutil.rmtree(project / "models" / "value")
    run(project, "dvc", "checkout", "value")
    assert file_hashes(project / "models" / "value") == before
    assert "didn't change, skipping" in run(project, "dvc", "repro", "value").stdout
    again = run(project, sys.executable, "-m", "studies.sweeps.kept", "restore")
    assert "present, nothing restored" in again.stdout


def test_restore_refuses_when_the_stage_changed_since_its_lock(project: Path):
    shutil.rmtree(project / "models" / "value", ignore_errors=True)
    (project / "seed.txt").write_text("6")  # the stage's dep moved on: a retrain is due
    try:
        out = run(project, sys.executable, "-m", "studies.sweeps.kept", "restore", check=False)
        assert out.returncode == 2 and "changed since its lock" in out.stderr
        assert not (project / "models" / "value").exists()  # nothing written
    finally:
        (project / "seed.txt").write_text("5")
    out = run(project, sys.executable, "-m", "studies.sweeps.kept", "restore", "--section",
              "value_sciworld", check=False)  # its model is absent and was never kept
    assert out.returncode == 2 and "no kept copy" in out.stderr
