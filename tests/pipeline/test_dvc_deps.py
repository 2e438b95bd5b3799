"""dvc.yaml as DVC reads it: one ``python -m amc.pipeline.<stage>`` per stage, and code deps that
make ``dvc status`` see an edit of the code a stage really uses (and only that).

**Every imported module is a dep.** For each stage of ``dvc.yaml``, ``grpo/dvc.yaml``,
``sweeps/dvc.yaml`` and ``sft/dvc.yaml`` the modules of ``amc/`` (and ``studies/``) its
entry module imports, transitively (read from the source: static, function-local and
relative imports), must each be covered by a dep (the file, or a folder above it), except the
shared plumbing that the header of ``dvc.yaml`` names as not listed.
A new import without a dep fails here.

The lock is made by ``dvc commit`` over placeholder outputs (no stage runs): what is tested is
the stage graph's declared dependencies, in seconds.
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
STAGES = ("collect", "dataset", "train", "evaluate", "promote", "report")
DVC_FILES = ("dvc.yaml", "grpo/dvc.yaml", "sweeps/dvc.yaml", "sft/dvc.yaml")
PLUMBING = ("amc/config.py", "amc/registry.py", "amc/results.py", "amc/types.py",
            "amc/tracking.py", "amc/pipeline/params.py", "amc/pipeline/promote_params.py",
            "amc/pipeline/lineage.py",
            "amc/errors.py", "amc/protocols.py", "amc/progress.py", "amc/retry.py",
            "amc/ports.py")
"""Shared plumbing that does not change results: no stage lists it (dvc.yaml's header says so)."""


def amc_modules() -> dict[str, Path]:
    """Dotted name -> file (relative to the repository) of every module of ``amc/`` and of
    ``studies/`` (the sweeps' stages run study code that imports ``amc``)."""
    out = {}
    for p in sorted([*ROOT.glob("amc/**/*.py"), *ROOT.glob("studies/**/*.py")]):
        rel = p.relative_to(ROOT)
        out[".".join(rel.with_suffix("").parts).removesuffix(".__init__")] = rel
    return out


def imported(module: str, mods: dict[str, Path]) -> set[str]:
    """The ``amc`` modules ``module`` imports anywhere in its file (function bodies included)."""
    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    path = mods[module]
    pkg = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str | None] = set()
    for node in ast.walk(ast.parse((ROOT / path).read_text())):
        if isinstance(node, ast.Import):
            found |= {resolve(a.name) for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                base = ".".join([*up, *([base] if base else [])])
            found |= {resolve(f"{base}.{a.name}") or resolve(base) for a in node.names}
    return {m for m in found if m and m != module and m not in ("amc", "studies")}


def import_closure(entry: str) -> set[str]:
    """``entry`` and every ``amc`` module it imports, transitively."""
    mods = amc_modules()
    seen: set[str] = set()
    todo = [entry]
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo += imported(m, mods) - seen
    return seen


def declared_stages() -> list[tuple[str, str, str, list[str]]]:
    """(dvc file, stage, entry module, code deps relative to the repository) of every stage."""
    out = []
    for f in DVC_FILES:
        spec = yaml.safe_load((ROOT / f).read_text())
        for name, stage in spec["stages"].items():
            entry = re.search(r"python -m ([\w.]+)", stage["cmd"])
            assert entry, f"{f}: stage {name}: no `python -m <module>` in {stage['cmd']!r}"
            deps = [os.path.relpath((ROOT / f).parent / d, ROOT) for d in stage["deps"]]
            out.append((f, name, entry.group(1), deps))
    return out


def covered(path: Path, deps: list[str]) -> bool:
    return any(path == Path(d) or Path(d) in path.parents for d in deps)


@pytest.mark.parametrize(("dvc_file", "stage", "entry", "deps"), [
    pytest.param(*s, id=f"{s[0]}:{s[1]}") for s in declared_stages()])
def test_every_amc_module_a_stage_imports_is_one_of_its_deps(
        dvc_file: str, stage: str, entry: str, deps: list[str]) -> None:
    mods = amc_modules()
    missing = sorted(str(mods[m]) for m in import_closure(entry)
                     if str(mods[m]) not in PLUMBING and not covered(mods[m], deps))
    assert missing == [], f"{dvc_file}: stage {stage} imports code none of its deps covers"
    absent = [d for d in deps if not (ROOT / d).exists() and d.startswith(("amc", "studies"))]
    assert absent == [], f"{dvc_file}: stage {stage}: deps that do not exist"


def test_the_import_walk_follows_function_local_and_transitive_imports() -> None:
    train = import_closure("amc.pipeline.train")
    assert "amc.value.train" in train  # imported inside run() only
    assert "amc.value.train_head" in train  # through amc.value.train
    assert not covered(Path("amc/value/train.py"), ["amc/val", "amc/value/train"])
    assert covered(Path("amc/value/train.py"), ["amc/value"])


def test_the_plumbing_left_out_is_what_the_header_of_dvc_yaml_names() -> None:
    header = (ROOT / "dvc.yaml").read_text().split("\nstages:", 1)[0]
    named = re.findall(r"amc/[\w/]+\.py", header.split("Not listed:", 1)[1])
    assert sorted(named) == sorted(PLUMBING)


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
        for dep in stage.get("deps", []):  # a data file outside amc/ (a held-out task set)
            if not dep.startswith("amc/") and (ROOT / dep).is_file():
                (root / dep).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(ROOT / dep, root / dep)
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
ALL = set(STAGES)


@pytest.mark.parametrize(("edited", "stages"), [
    # every stage checks its inputs' plans with the runner's method configs (artifacts)
    ("amc/smc/sampler.py", ALL),
    pytest.param("amc/runner.py", ALL, marks=SLOW),
    pytest.param("amc/envs/textcraft/env.py", ALL, marks=SLOW),  # via the benchmark records
    pytest.param("amc/priors/embedded.py", {"collect", "evaluate"}, marks=SLOW),
    # promote scores prior states with both models (its calibration guard)
    ("amc/value/train.py", {"train", "evaluate", "promote", "report"}),
    pytest.param("amc/value/model.py", ALL, marks=SLOW),
    pytest.param("amc/value/data.py", {"dataset", "train", "evaluate", "promote", "report"},
                 marks=SLOW),
    pytest.param("amc/reports/paired.py", {"evaluate", "report"}, marks=SLOW),
    ("amc/pipeline/report.py", {"report"}),
    ("amc/pipeline/gate_stats.py", {"promote", "report"}),
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
