"""Lineage of pipeline runs (amc.pipeline.lineage) against a real temp MLflow store."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from amc.pipeline import lineage
from tests.pipeline.conftest import MODEL, register_version


def test_stage_run_is_named_tagged_and_back_dated(workdir: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import mlflow

    monkeypatch.setenv("DVC_EXP_NAME", "fuzzy-exp")
    started = time.time() - 120.0  # the work began two minutes before the run was recorded
    with lineage.stage_run("collect", params={"a": {"b": 1}}, round_=2, started=started,
                           detail="24 records") as run:
        run_id = run.info.run_id
    got = mlflow.MlflowClient().get_run(run_id)
    assert got.info.start_time == int(started * 1000)
    assert got.info.end_time >= got.info.start_time + 120_000
    assert got.info.run_name == "collect r2 · 24 records · fuzzy-exp"  # what differs
    tags = got.data.tags
    assert (tags["amc.stage"], tags["amc.round"], tags["dvc.exp_name"]) == (
        "collect", "2", "fuzzy-exp")
    assert "prefect.flow_run_id" not in tags  # not inside a flow run
    assert got.data.params == {"a.b": "1"}
    monkeypatch.delenv("DVC_EXP_NAME")
    with lineage.stage_run("report", params={}) as run:
        pass
    plain = mlflow.MlflowClient().get_run(run.info.run_id)
    assert plain.info.run_name == "report"
    assert not {"amc.round", "dvc.exp_name"} & set(plain.data.tags)


def test_dataset_input_carries_the_dvc_hash(workdir: Path) -> None:
    import mlflow

    Path("data/dataset").mkdir(parents=True)
    Path("dvc.lock").write_text(yaml.safe_dump({"schema": "2.0", "stages": {"dataset": {
        "outs": [{"path": "data/dataset", "md5": "0123456789abcdef0123456789abcdef.dir"}]}}}))
    digest = lineage.dvc_hash("data/dataset")
    assert digest == "0123456789abcdef0123456789abcdef.dir"
    assert lineage.dvc_hash("data/other") is None
    with lineage.stage_run("train", params={}) as run:
        pass  # a finished run still takes inputs
    lineage.log_dataset_input(run.info.run_id, "data/dataset", digest, context="training",
                              round_=4)
    (inp,) = mlflow.MlflowClient().get_run(run.info.run_id).inputs.dataset_inputs
    assert inp.dataset.digest == digest and inp.dataset.name == "data/dataset"
    assert {t.key: t.value for t in inp.tags} == {"mlflow.data.context": "training",
                                                  "amc.round": "4"}


def test_annotate_version_appends_to_the_description(workdir: Path) -> None:
    import mlflow

    v = register_version(workdir, 1.0)
    client = mlflow.MlflowClient()
    client.update_model_version(MODEL, v, description="Trained on round 0.")
    lineage.annotate_version(MODEL, v, "Gate t1: promoted, no champion yet")
    lineage.annotate_version(MODEL, v, "Gate t2: kept, tie")
    assert client.get_model_version(MODEL, v).description == (
        "Trained on round 0.\nGate t1: promoted, no champion yet\nGate t2: kept, tie")
