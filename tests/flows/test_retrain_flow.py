"""retrain_and_promote in a DVC project: the whole loop as a flow, sharing DVC's lineage, and an
overridden run that leaves the params.yaml lineage and the default model alone."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import sys
from pathlib import Path

import pytest
import yaml
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

from amc.pipeline.params import overrides_tag
from tests.flows.conftest import ROOT
from tests.pipeline.conftest import copy_stage_inputs
from tests.pipeline.test_dvc import Project, toy_params

MODEL = "amc-value-synthetic"


def aliases(uri: str, name: str) -> dict[str, str]:
    import mlflow

    m = mlflow.MlflowClient(tracking_uri=uri).get_registered_model(name)
    return {k: str(v) for k, v in m.aliases.items()}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Project, str]:
    """A toy DVC project as cwd, with its own MLflow store."""
    import mlflow

    shutil.copytree(ROOT / "amc", tmp_path / "amc", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "dvc.yaml", tmp_path / "dvc.yaml")
    copy_stage_inputs(tmp_path)  # the declared held-out task lists collect reads
    p = toy_params()
    p["evaluate"].update(methods=["bon", "amc"], n_grid=[4])
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(p, sort_keys=False))
    (tmp_path / ".gitignore").write_text("mlruns/\n__pycache__/\nruns/\n")
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
                ["cp", str(ROOT / ".dvcignore"), ".dvcignore"],  # the repo's: timing/ out
                ["git", "add", "-A"], ["git", "commit", "-qm", "toy"]):
        pr.run(*cmd)
    return pr, uri


@pytest.mark.slow
async def test_retrain_and_promote_flow(project: tuple[Project, str],
                                        caplog: pytest.LogCaptureFixture,
                                        capfd: pytest.CaptureFixture[str]) -> None:
    import asyncio
    import logging

    from flows.retrain_and_promote import retrain_and_promote

    pr, uri = project
    logging.getLogger("prefect").addHandler(caplog.handler)  # prefect does not propagate
    caplog.set_level(logging.INFO, logger="prefect")
    d = await asyncio.to_thread(retrain_and_promote, "params.yaml", None)
    said = [r.getMessage() for r in caplog.records]
    for stage in ("collect: ", "dataset ", "train: registered", "evaluate: ",  # issue 63:
                  "promote: PROMOTED v1 to champion", "report: "):  # the stages' own lines
        assert any(m.startswith(stage) for m in said), (stage, said[-20:])
    assert not any(m.startswith("{") for m in said)  # no raw JSON
    assert not any("do not exist" in m for m in said)  # the flow made amc-data-eval
    err = capfd.readouterr().err  # the evaluation units show their progress, as collect's do
    assert re.search(r"smc@4\+challenger s0: \d+/\d+ tasks, \d+ s", err), err[-2000:]
    assert d["promote"] and d["challenger_version"] == "1"
    assert aliases(uri, MODEL) == {"challenger": "1", "champion": "1"}
    assert json.loads(Path("metrics/promotion.json").read_text())["promoted"] == 1
    assert Path("plots/success_vs_n.png").is_file()
    # the flow recorded every stage's outputs in dvc.lock: `dvc repro` has nothing left to do
    assert "up to date" in pr.run("dvc", "status").lower()
    lock = yaml.safe_load(Path("dvc.lock").read_text())
    assert set(lock["stages"]) == {"collect", "dataset", "train", "evaluate", "promote",
                                   "report"}
    async with get_client() as client:
        arts = await client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=["amc-promotion"])))
    assert arts and "PROMOTED" in arts[0].data
    async with get_client() as client:  # the evaluation with its plots as images (issue 29)
        rep = await client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=["amc-report"])))
    png = base64.b64encode(Path("plots/success_vs_n.png").read_bytes()).decode("ascii")
    assert rep and f"![success vs n](data:image/png;base64,{png})" in rep[0].data

    # A retraining round with nothing new (issue 29): the collection finds every task on disk
    # (no shard collects again), the dataset is rebuilt from the same rollouts, and neither
    # DVC output gets a new version.
    from flows._common import record
    from flows.collect import collect_flow
    from flows.train import dataset_task

    def outs(stage: str) -> list[str]:
        lock = yaml.safe_load(Path("dvc.lock").read_text())["stages"][stage]
        return [o["md5"] for o in lock["outs"]]

    versions = {s: outs(s) for s in ("collect", "dataset")}
    traj = {f: f.read_bytes() for f in Path("data/trajectories").rglob("*") if f.is_file()}
    await asyncio.to_thread(collect_flow, "params.yaml", None)
    content = await asyncio.to_thread(dataset_task, "params.yaml", [])
    await asyncio.to_thread(record, "dataset", "params.yaml", [])
    assert {f: f.read_bytes() for f in Path("data/trajectories").rglob("*") if f.is_file()} == traj
    assert {s: outs(s) for s in versions} == versions  # no new dataset version
    assert content == json.loads(Path("data/dataset/source.json").read_text())["content_hash"]
    assert "up to date" in pr.run("dvc", "status").lower()

    # The weekly retraining with nothing new (issue 54): data, params and code unchanged since
    # v1, so it trains nothing, registers nothing, evaluates nothing and says so.
    import mlflow

    def runs() -> dict[str, int]:
        return {e: len(mlflow.search_runs(experiment_names=[e], output_format="list"))
                for e in ("amc-collect", "amc-value", "amc-dataset", "amc-evaluate",
                          "amc-promote")}

    counted, decision = runs(), Path("data/promotion/decision.json").read_bytes()
    caplog.clear()
    again = await asyncio.to_thread(retrain_and_promote, "params.yaml", None)
    assert any(r.getMessage().startswith("collect: nothing new:") for r in caplog.records)
    assert again["nothing_new"] and again["challenger_version"] == "1"
    client = mlflow.MlflowClient(tracking_uri=uri)
    assert [str(v.version) for v in client.search_model_versions(f"name = '{MODEL}'")] == ["1"]
    assert runs() == counted  # no repeated collection, training, dataset, evaluation or gate
    assert Path("data/promotion/decision.json").read_bytes() == decision
    async with get_client() as client_:
        arts = await client_.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=["amc-promotion"])))
    assert any(a.data.startswith("# Nothing new") and "nothing trained, registered" in a.data
               for a in arts)

    # An overridden run (issue 16, item 13): every stage gets the overrides, writes under its
    # own folder and registers its own model; params.yaml's outputs, lineage and model stay.
    ov = ["collect.rollouts=2", "evaluate.seeds=[0]"]
    before = {f: Path(f).read_bytes() for f in ("data/trajectories/manifest.json",
                                                "data/dataset/source.json", "metrics/eval.json",
                                                "data/eval/evaluation.json", "dvc.lock")}
    d2 = await asyncio.to_thread(retrain_and_promote, "params.yaml", ov)
    tag = overrides_tag(ov)
    assert tag is not None
    own = f"{MODEL}-{tag.removeprefix('overrides-')}"
    assert d2["model"] == own and d2["promote"]  # its own registry name, its own champion
    assert aliases(uri, own) == {"challenger": "1", "champion": "1"}
    assert aliases(uri, MODEL) == {"challenger": "1", "champion": "1"}
    assert {f: Path(f).read_bytes() for f in before} == before
    manifest = json.loads(Path(f"runs/{tag}/data/trajectories/manifest.json").read_text())
    assert manifest["rollouts"] == 2 and manifest["complete"]
    ev = json.loads(Path(f"runs/{tag}/data/eval/evaluation.json").read_text())
    assert ev["seeds"] == [0] and ev["models"]["name"] == own
    assert Path(f"runs/{tag}/data/report/summary.json").is_file()
    assert "up to date" in pr.run("dvc", "status").lower()
