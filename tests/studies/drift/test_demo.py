"""The offline drift demo, end to end at toy size: a real ``prefect server`` (fixture), a real
MLflow store, real training (1-layer MiniLM) on TextCraft with the planner-mix prior and the
change it plays (``CHANGE``). The measured claims (fall, recovery) are the measure scale's,
committed in ``evidence/drift/demo.json``; ``tests/flows/test_drift_story.py`` checks the
story's parts fast."""

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


def test_drift_demo_tells_its_story_at_toy_size(tmp_path: Path, prefect_server: str) -> None:
    """The plumbing, at a size that measures nothing: whatever the toy numbers, each check's
    gain is its tasks' mean, the story's fall and recovery are the checks' per-task changes,
    drift is what the monitor's rule says of the recorded numbers, and round 1 (run exactly
    when check B marked drift) saw prior B."""
    import mlflow

    from amc.pipeline.gate_stats import drift_check
    from amc.pipeline.params import load_params
    from studies.drift.demo import CHANGE

    since = datetime.now(UTC)
    env = {**os.environ, "PREFECT_API_URL": prefect_server, "PYTHONPATH": str(ROOT)}
    env.pop("MLFLOW_TRACKING_URI", None)  # the demo's own store: sqlite:///mlruns/mlflow.db
    py = [sys.executable, "-m", "studies.drift.demo"]
    subprocess.run([*py, "init", "params.yaml", "toy"], cwd=tmp_path, env=env, check=True)
    proc = subprocess.run(py, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=3000)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    out = json.loads((tmp_path / "plots/drift_demo.json").read_text())
    rows = out["checks"]
    assert [r["phase"] for r in rows][:2] == ["A", "B"]
    assert (rows[0]["prior"], rows[1]["prior"]) == (CHANGE["before"], CHANGE["after"])
    for r in rows:  # the gain over Best-of-N is the mean over tasks of the per-task gains
        per = r["gain_by_task"]
        assert r["gain"] == pytest.approx(sum(per.values()) / len(per))
        assert r["gain_lo"] <= r["gain"] <= r["gain_hi"] and 0 <= r["gain_p"] <= 1
    a, b = rows[0]["gain_by_task"], rows[1]["gain_by_task"]
    assert out["fall"]["mean"] == pytest.approx(sum(b[t] - a[t] for t in a) / len(a))
    hist = [json.loads(x)
            for x in (tmp_path / "data/drift/history.jsonl").read_text().splitlines()]
    d = load_params(tmp_path / "params.yaml").drift
    for rec in hist:  # drift is the rule applied to what the check recorded
        assert rec["drift"] == drift_check(
            rec["baseline"], rec["now"], max_calibration_increase=d.max_calibration_increase,
            max_bias_shift=d.max_bias_shift, max_success_drop=d.max_success_drop,
            max_gain_drop=d.max_gain_drop, level=d.level).drift
    assert (len(rows) == 3) == bool(rows[1]["drift"]) == (len(out["decisions"]) == 2)
    assert out["decisions"][0]["promoted"]  # no champion yet
    assert (tmp_path / "plots/drift_demo.png").stat().st_size > 10_000

    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{tmp_path}/mlruns/mlflow.db")
    model = client.get_registered_model("amc-value-textcraft")
    assert str(model.aliases["champion"]) == rows[-1]["version"]
    if len(rows) == 3:
        ledger = json.loads((tmp_path / "data/rounds/round-0001.json").read_text())
        assert ledger["prior"]["options"] == CHANGE["after"]  # the prior it retrained on
        assert rows[2]["version"] == (str(int(rows[0]["version"]) + 1)
                                      if out["decisions"][1]["promoted"] else rows[0]["version"])

    states, keys = asyncio.run(server_view(prefect_server, since))
    assert states["amc-drift-demo"] == {"COMPLETED"}
    assert states["amc-drift-monitor"] == {"COMPLETED"}
    assert states["amc-retrain-and-promote"] == {"COMPLETED"}
    assert {"amc-drift", "amc-drift-demo", "amc-promotion"} <= keys
