"""The drift-monitor flow: on drift it starts a run of the retraining deployment (Prefect API)
and publishes the check as an artifact; without drift it starts nothing."""

from __future__ import annotations

from pathlib import Path

import mlflow
import pytest
from prefect.client.orchestration import get_client

from flows.drift import drift_flow
from flows.retrain_and_promote import retrain_and_promote
from tests.flows.test_flows import artifact
from tests.monitor.test_drift import MODEL, set_q, textcraft, train_and_promote  # noqa: F401

pytestmark = pytest.mark.slow


async def test_drift_triggers_the_retraining_deployment(textcraft: Path) -> None:  # noqa: F811
    import asyncio

    # the retraining deployment, registered but not served: a triggered run stays scheduled
    dep = await asyncio.to_thread(retrain_and_promote.to_deployment, name="retrain-and-promote",
                                  parameters={"params_path": "params.yaml"})
    dep_id = await asyncio.to_thread(dep.apply)
    v = await asyncio.to_thread(train_and_promote, textcraft)

    calm = await asyncio.to_thread(drift_flow, "params.yaml", None)
    assert calm["drift"] is False and "triggered_run" not in calm
    async with get_client() as client:
        assert await client.read_flow_runs() is not None
        runs = [r for r in await client.read_flow_runs() if r.deployment_id == dep_id]
    assert runs == []

    set_q(0.2)
    rec = await asyncio.to_thread(drift_flow, "params.yaml", None)
    assert rec["drift"] is True and rec.get("trigger_error") is None
    async with get_client() as client:
        run = await client.read_flow_run(rec["triggered_run"])
    assert run.deployment_id == dep_id and "drift" in run.tags
    tags = mlflow.MlflowClient().get_model_version(MODEL, v).tags
    assert tags["drift.triggered_run"] == rec["triggered_run"]
    art = await artifact("amc-drift")
    assert art is not None and "DRIFT" in art.data and rec["triggered_run"] in art.data
