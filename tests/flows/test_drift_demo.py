"""The offline drift demo, end to end at toy size: a real ``prefect server`` (fixture), a real
MLflow store, real training (1-layer MiniLM) on TextCraft with the planner-mix prior."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from prefect.client.orchestration import PrefectClient
from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

from tests.flows.conftest import ROOT

pytestmark = pytest.mark.slow


async def server_view(url: str, since: datetime) -> tuple[dict[str, set[str]], set[str]]:
    """Flow-run states by flow name and artifact keys, for the runs this demo made: created
    since ``since`` and not by the server's scheduler. The server is shared by the session:
    ``tests/flows/test_deploy.py`` registers the cron deployments, and the scheduler service
    keeps adding their future runs (SCHEDULED, ``auto_scheduled``) while the demo runs."""
    async with PrefectClient(api=url) as client:
        runs = [r for r in await client.read_flow_runs()
                if r.created and r.created >= since and not r.auto_scheduled]
        flows = {f.id: f.name for f in await client.read_flows()}
        arts = await client.read_artifacts(artifact_filter=ArtifactFilter(
            key=ArtifactFilterKey(any_=["amc-drift", "amc-drift-demo", "amc-promotion"])))
    states: dict[str, set[str]] = {}
    for r in runs:
        states.setdefault(flows[r.flow_id], set()).add(r.state_type.value)
    return states, {a.key for a in arts if a.created and a.created >= since}


def test_drift_demo_flags_what_got_worse(tmp_path: Path, prefect_server: str) -> None:
    import mlflow

    since = datetime.now(UTC)
    env = {**os.environ, "PREFECT_API_URL": prefect_server, "PYTHONPATH": str(ROOT)}
    env.pop("MLFLOW_TRACKING_URI", None)  # the demo's own store: sqlite:///mlruns/mlflow.db
    py = [sys.executable, "-m", "flows.drift_demo"]
    subprocess.run([*py, "init", "params.yaml"], cwd=tmp_path, env=env, check=True)
    proc = subprocess.run(py, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=3000)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    rows = json.loads((tmp_path / "plots/drift_demo.json").read_text())
    assert [r["q"] for r in rows] == [0.4, 0.2, 0.8, 0.8]
    # flagged on what got worse, not on any movement: at q = 0.2 the bias moved toward 0 by
    # more than drift.max_bias_shift (0.05; the old either-way rule flagged it): no drift
    assert [r["drift"] for r in rows] == [False, False, True, True]
    mild, hurt = rows[1], rows[2]
    assert abs(mild["calibration_bias"]) < abs(mild["baseline_calibration_bias"]) - 0.05
    assert mild["reasons"] == []
    assert abs(hurt["calibration_bias"]) > abs(hurt["baseline_calibration_bias"]) + 0.05
    assert hurt["reasons"] and all("grew" in r for r in hurt["reasons"])
    for r in rows:  # each check carries the gain over Best-of-N with its paired interval
        assert r["gain_lo"] <= r["gain"] <= r["gain_hi"] and 0 <= r["gain_p"] <= 1
    # the retrained toy head is not better calibrated: the gate keeps the drifted champion
    assert len({r["version"] for r in rows}) == 1
    assert (tmp_path / "plots/drift_demo.png").stat().st_size > 10_000

    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{tmp_path}/mlruns/mlflow.db")
    model = client.get_registered_model("amc-value-textcraft")
    assert str(model.aliases["champion"]) == rows[0]["version"]
    old = client.get_model_version("amc-value-textcraft", rows[0]["version"]).tags
    new = client.get_model_version("amc-value-textcraft", str(int(rows[0]["version"]) + 1)).tags
    assert old["drift.status"] == "drift" and "drift.gain" in old and "baseline.gain" in old
    assert new["promotion.decision"] == "kept" and new["promotion.champion_drifted"] == "True"
    assert new["amc.round"] == "1"
    ledger = json.loads((tmp_path / "data/rounds/round-0001.json").read_text())
    assert ledger["prior"]["options"] == {"q": 0.8}  # the round records the prior it saw

    states, keys = asyncio.run(server_view(prefect_server, since))
    assert states["amc-drift-demo"] == {"COMPLETED"}
    assert states["amc-drift-monitor"] == {"COMPLETED"}
    assert states["amc-retrain-and-promote"] == {"COMPLETED"}
    assert keys == {"amc-drift", "amc-drift-demo", "amc-promotion"}
