"""What `pip install amc` ships and runs: the product's packages (``amc`` and nothing beside it:
no study, flow, benchmark or test), and the core install (no extras) runs the engine on
TextCraft with no torch, MLflow, Prefect, DVC or ScienceWorld in the environment."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "mlflow", "prefect", "dvc", "scienceworld", "transformers")
LAB = ("studies", "flows", "benchmarks", "tests")
"""Top-level folders of the repository that are not the product: never in the package."""


def _product(name: str) -> bool:
    return name == "amc" or name.startswith("amc.")


def test_setuptools_finds_every_amc_package_and_no_study() -> None:
    """The packages pyproject's ``[tool.setuptools.packages.find]`` selects, listed the way
    setuptools lists them: every package of ``amc/`` and nothing of the lab, which the tree
    does hold (so the check is not vacuous)."""
    from setuptools import find_packages

    cfg = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    find = cfg["packages"]["find"]
    shipped = set(find_packages(str(REPO), include=find.get("include", ("*",)),
                                exclude=find.get("exclude", ())))
    everything = set(find_packages(str(REPO)))
    amc = {p for p in everything if _product(p)}
    assert {p.split(".")[0] for p in everything} >= {"amc", "studies"}
    assert shipped == amc, sorted(shipped ^ amc)
    assert not [k for k in cfg.get("package-data", {}) if not _product(k)]


def test_the_wheel_holds_the_product_only(tmp_path: Path) -> None:
    """A wheel built from a copy of the tree with the lab beside the product: every ``amc``
    module and its package data are inside, no study, flow or benchmark file is."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(REPO / name, src / name)
    for top in ("amc", *LAB[:-1]):
        shutil.copytree(REPO / top, src / top, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                    "--no-build-isolation", "-w", str(tmp_path / "dist"), str(src)],
                   check=True, timeout=300, capture_output=True)
    (wheel,) = (tmp_path / "dist").glob("amc-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"amc"}, sorted(tops)
    modules = {str(p.relative_to(src)) for p in (src / "amc").rglob("*.py")}
    assert modules <= set(names), sorted(modules - set(names))[:5]
    assert "amc/envs/textcraft/paper_splits.json" in names
    assert (src / "studies" / "llm_regime" / "declared").is_dir()  # beside it, left out
    (lic,) = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]  # declared:
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["license"]
    assert declared == {"text": "Apache-2.0"}  # ... and its text ships with the wheel
    assert "Apache License\n                           Version 2.0" in \
        zipfile.ZipFile(wheel).read(lic).decode()


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
    for cmd in (["promote"], ["report"], ["train", "data/dataset"]):  # issue 63: each needs an
        r = subprocess.run([venv / "bin" / "amc", *cmd], capture_output=True, text=True,
                           timeout=300, cwd=tmp_path)  # extra: one line naming it, no traceback
        assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, (cmd, r.stderr[-2000:])
        assert r.stderr.startswith("error: this command needs ") and "pip install 'amc[" in \
            r.stderr, (cmd, r.stderr)
