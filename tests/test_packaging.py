"""The core install: `pip install amc` (no extras) runs the engine on TextCraft with no torch,
MLflow, Prefect, DVC or ScienceWorld in the environment."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "mlflow", "prefect", "dvc", "scienceworld", "transformers")


@pytest.mark.slow
def test_core_install_runs_textcraft_without_the_heavy_extras(tmp_path: Path) -> None:
    uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not installed (scripts/setup.sh installs it)")
    src = tmp_path / "src"  # build from a copy: a build in place would litter the checkout
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    shutil.copytree(REPO / "amc", src / "amc", ignore=shutil.ignore_patterns("__pycache__"))
    venv = tmp_path / "venv"
    subprocess.run([uv, "venv", "-q", "-p", sys.executable, str(venv)], check=True)
    py = venv / "bin" / "python"
    subprocess.run([uv, "pip", "install", "-q", "--python", str(py), str(src)], check=True,
                   timeout=600)
    probe = f"import importlib.util as u; print([m for m in {HEAVY!r} if u.find_spec(m)])"
    found = subprocess.run([py, "-c", probe], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "[]", f"the core install pulled {found.stdout.strip()}"
    out = tmp_path / "run"
    r = subprocess.run(
        [venv / "bin" / "amc", "run", "--env", "textcraft", "--prior", "random-valid", "-m",
         "react,bon@2,smc@2", "--max-tasks", "2", "--quiet", "--out", str(out)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "smc@2" in r.stdout
    assert sorted(p.name for p in out.glob("*.jsonl")) == [
        "bon@2__seed0.jsonl", "react__seed0.jsonl", "smc@2__seed0.jsonl"]
