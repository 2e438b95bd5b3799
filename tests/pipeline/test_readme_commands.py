"""The documented synthetic-toy experiment runs as written, from the default params.yaml.

The README's earlier form (``-S 'env.options={}'``) failed: DVC merges a mapping given with -S
into the existing one, so TextCraft's options reached the synthetic environment, and the failed
run had already deleted the persisted trajectories. The command is taken from the documents'
text itself (docs/usage.md, docs/pipeline.md), so the test breaks when the documentation does.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from tests.pipeline.test_dvc import Project

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def documented_command(doc: Path) -> str:
    """The ``dvc exp run -S env.name=synthetic ...`` command of a document, lines joined."""
    text = doc.read_text()
    m = re.search(r"^[ \t]*dvc exp run --temp -S env\.name=synthetic(?:.*\\\n)*.*$", text,
                  re.M)
    assert m, f"no synthetic dvc exp run command in {doc}"
    return " ".join(line.rstrip("\\").strip() for line in m.group(0).splitlines())


def test_the_docs_give_the_same_synthetic_command() -> None:
    assert documented_command(ROOT / "docs" / "usage.md") == documented_command(
        ROOT / "docs" / "pipeline.md")


def test_documented_synthetic_experiment_runs(tmp_path: Path) -> None:
    cmd = documented_command(ROOT / "docs" / "usage.md")
    shutil.copytree(ROOT / "amc", tmp_path / "amc", ignore=shutil.ignore_patterns("__pycache__"))
    held_out = yaml.safe_load((ROOT / "params.yaml").read_text())["collect"].get(
        "exclude_tasks_files", [])  # the default's held-out task lists (collect deps)
    for f in ("dvc.yaml", "params.yaml", *held_out):
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / f, tmp_path / f)  # the default: TextCraft + the embedded prior
    (tmp_path / ".gitignore").write_text("mlruns/\n__pycache__/\n")
    pr = Project(tmp_path)
    for c in (["git", "init", "-q"], ["git", "config", "user.email", "t@amc.invalid"],
              ["git", "config", "user.name", "amc test"], ["dvc", "init", "-q"],
              ["git", "add", "-A"], ["git", "commit", "-qm", "default"]):
        pr.run(*c)
    (tmp_path / "data/eval").mkdir(parents=True)
    (tmp_path / "data/eval/kept.jsonl").write_text("another configuration's results\n")
    pr.run("bash", "-c", cmd)
    # --temp: the workspace (its persisted data included) is as it was ...
    assert (tmp_path / "data/eval/kept.jsonl").read_text() == "another configuration's results\n"
    assert not (tmp_path / "data/eval/evaluation.json").exists()
    name = pr.run("dvc", "exp", "list", "--name-only").split()[0]
    pr.run("dvc", "exp", "apply", name)  # ... and the experiment's outputs come back from cache
    ev = json.loads((tmp_path / "data/eval/evaluation.json").read_text())
    assert ev["status"] == "complete" and ev["env"] == "synthetic" and ev["prior"] == "synthetic"
    assert ev["config"]["env"]["options"] == {}  # cleared, not merged with TextCraft's
    assert json.loads((tmp_path / "metrics/eval.json").read_text())["complete"] == 1
