"""What the operator's documents say about the tools' own defaults holds (issue 63, item 7)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ("README.md", "docs/pipeline.md", "docs/usage.md", "docs/value.md")


def test_the_documented_prefect_home_is_git_ignored() -> None:
    assert "PREFECT_HOME=$PWD/.prefect" in (ROOT / "docs/pipeline.md").read_text()
    subprocess.run(["git", "-C", str(ROOT), "check-ignore", "-q", ".prefect/prefect.db"],
                   check=True)  # exit 1 (not ignored) raises


def test_the_paused_state_is_shown_by_the_commands_the_docs_name() -> None:
    """`prefect deployment ls` prints name, id and work pool only; `inspect` and `ls -o json`
    dump the deployment model, whose ``paused`` field is what the docs point at."""
    from prefect.client.schemas.responses import DeploymentResponse

    doc = " ".join((ROOT / "docs/pipeline.md").read_text().split())
    assert "`prefect deployment ls` does not say so" in doc
    assert "`prefect deployment ls -o json` gives every deployment's `\"paused\"`" in doc
    assert "paused" in DeploymentResponse.model_fields


def test_every_documented_mlflow_ui_runs_one_worker() -> None:
    """MLflow's default of 4 workers took ~130 s to answer on 2 busy cores."""
    for name in DOCS:
        text = " ".join((ROOT / name).read_text().split())
        cmds = re.findall(r"`(mlflow ui [^`]*)`", text)
        assert cmds and all("--workers 1" in c for c in cmds), (name, cmds)


def test_make_exp_says_when_there_is_no_experiment_yet() -> None:
    rule = (ROOT / "Makefile").read_text().split("\nexp:")[1]
    assert "dvc exp ls" in rule and "no experiment yet" in rule
