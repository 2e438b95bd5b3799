"""The committed ``dvc.lock`` matches the code: no dependency of any stage (code, params,
``dvc.yaml``'s commands) changed since the lock was written, so a fresh clone's ``dvc status``
lists only missing outputs and its first ``make run`` reruns nothing it need not.

The check is DVC's own: the tracked dependencies of every stage (what a fresh clone holds) are
copied into a temp git repository with ``dvc.yaml``, ``dvc.lock``, ``params.yaml`` and ``.dvc/``,
and ``dvc status --json`` there must report no changed dependency other than a data
dependency that another stage produces (absent in a clone: its producer's status covers it).
When it fails, regenerate the lock after the code is final (README: ``make run``, then commit
``dvc.lock``, ``metrics/`` and ``plots/``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DVC = str(Path(sys.executable).parent / "dvc")
PROJECT_FILES = ("dvc.yaml", "dvc.lock", "params.yaml", ".dvcignore", ".dvc/config")


def _paths(entries: list[Any]) -> list[str]:
    """Paths of a dvc.yaml ``deps``/``outs``/``metrics`` list (strings or one-key dicts)."""
    return [e if isinstance(e, str) else next(iter(e)) for e in entries or []]


def stage_paths(dvc_yaml: Path) -> tuple[set[str], set[str]]:
    """Every stage's deps, and every path a stage produces (outs, metrics, plots)."""
    stages = yaml.safe_load(dvc_yaml.read_text())["stages"]
    deps = {d for s in stages.values() for d in _paths(s.get("deps", []))}
    outs = {o for s in stages.values() for k in ("outs", "metrics", "plots")
            for o in _paths(s.get(k, []))}
    return deps, outs


def clone_deps(root: Path, dest: Path) -> None:
    """What a fresh clone of ``root`` holds of the project: its tracked deps and DVC files."""
    deps, _ = stage_paths(root / "dvc.yaml")
    listed = subprocess.run(["git", "ls-files", "-z", "--", *PROJECT_FILES, *sorted(deps)],
                            cwd=root, capture_output=True, check=True).stdout
    for rel in filter(None, listed.decode().split("\0")):
        if (root / rel).is_file():  # a tracked file deleted in the working tree stays absent
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / rel, dest / rel)
    subprocess.run(["git", "init", "-q"], cwd=dest, check=True)


def stale_deps(project: Path) -> dict[str, list[Any]]:
    """Per stage, the dependencies ``dvc status`` finds changed since ``dvc.lock`` was written
    (data deps that another stage produces are left out: a clone never holds them)."""
    _, outs = stage_paths(project / "dvc.yaml")
    proc = subprocess.run([DVC, "status", "--json"], cwd=project, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    found: dict[str, list[Any]] = {}
    for stage, items in json.loads(proc.stdout or "{}").items():
        for item in items:
            if isinstance(item, str):  # "changed command", "always changed"
                found.setdefault(stage, []).append(item)
                continue
            changed = {k: v for k, v in item.get("changed deps", {}).items() if k not in outs}
            if changed:
                found.setdefault(stage, []).append(changed)
    return found


def test_committed_dvc_lock_matches_the_code(tmp_path: Path) -> None:
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the committed lock is unknown")
    clone_deps(ROOT, tmp_path)
    stale = stale_deps(tmp_path)
    assert not stale, (
        f"dvc.lock is stale (a dependency changed since it was written): {stale}; regenerate "
        "it: make run && git add dvc.lock metrics plots && git commit -m 'make run ...'")


def test_the_check_sees_a_changed_code_dep_and_param(tmp_path: Path) -> None:
    """On a fresh toy lock: clean; after an edit of a code dep, a param and a cmd: each seen."""
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "a.py").write_text("x = 1\n")
    (tmp_path / "params.yaml").write_text("s:\n  lr: 0.1\n")
    (tmp_path / "dvc.yaml").write_text(yaml.safe_dump({"stages": {
        "make": {"cmd": "echo 1 > data.txt", "deps": ["code"], "params": ["s.lr"],
                 "outs": ["data.txt"]},
        "use": {"cmd": "cat data.txt > out.txt", "deps": ["data.txt"], "outs": ["out.txt"]}}}))
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run([DVC, "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run([DVC, "repro", "-q"], cwd=tmp_path, check=True, capture_output=True)
    clone = tmp_path / "clone"
    clone.mkdir()
    subprocess.run(["git", "add", "-A"], cwd=tmp_path, check=True)
    clone_deps(tmp_path, clone)
    assert not (clone / "data.txt").exists()  # outputs are not in a clone ...
    assert stale_deps(clone) == {}  # ... and their absence is not a stale lock
    (clone / "code" / "__pycache__").mkdir()  # bytecode (the project's .dvcignore) is not ...
    shutil.copy(ROOT / ".dvcignore", clone / ".dvcignore")
    (clone / "code" / "__pycache__" / "a.pyc").write_bytes(b"\0")
    assert stale_deps(clone) == {}
    (clone / "code" / "a.py").write_text("x = 2\n")  # ... a change; an edit of the code is
    assert stale_deps(clone) == {"make": [{"code": "modified"}]}
    (clone / "params.yaml").write_text("s:\n  lr: 0.2\n")
    assert stale_deps(clone)["make"] == [{"code": "modified", "params.yaml": {"s.lr": "modified"}}]
