"""retrain_and_promote in a DVC project: the whole loop as a flow, sharing DVC's lineage."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
import yaml
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

from tests.flows.conftest import ROOT
from tests.pipeline.test_dvc import Project, toy_params


@pytest.mark.slow
async def test_retrain_and_promote_flow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    import mlflow

    from flows.retrain_and_promote import retrain_and_promote

    shutil.copytree(ROOT / "amc", tmp_path / "amc", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "dvc.yaml", tmp_path / "dvc.yaml")
    p = toy_params()
    p["evaluate"].update(methods=["bon", "amc"], n_grid=[4])
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(p, sort_keys=False))
    (tmp_path / ".gitignore").write_text("mlruns/\n__pycache__/\n")
    uri = f"sqlite:///{tmp_path}/mlruns/mlflow.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.chdir(tmp_path)
    mlflow.set_tracking_uri(uri)
    pr = Project(tmp_path)
    pr.env["MLFLOW_TRACKING_URI"] = uri
    for cmd in (["git", "init", "-q"], ["git", "config", "user.email", "t@amc.invalid"],
                ["git", "config", "user.name", "amc test"], ["dvc", "init", "-q"],
                ["git", "add", "-A"], ["git", "commit", "-qm", "toy"]):
        pr.run(*cmd)

    d = await asyncio.to_thread(retrain_and_promote, "params.yaml", None, str(tmp_path))
    assert d["promote"] and d["challenger_version"] == "1"
    aliases = mlflow.MlflowClient(tracking_uri=uri).get_registered_model(
        "amc-value-synthetic").aliases
    assert str(aliases["champion"]) == "1"
    assert json.loads(Path("metrics/promotion.json").read_text())["promote"] is True
    assert Path("plots/success_vs_n.png").is_file()
    # the flow recorded its outputs in dvc.lock: `dvc repro` has nothing left to do
    assert "up to date" in pr.run("dvc", "status").lower()
    async with get_client() as client:
        arts = await client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=["amc-promotion"])))
    assert arts and "PROMOTED" in arts[0].data
