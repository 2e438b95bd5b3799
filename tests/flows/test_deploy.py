"""flows/deploy.py serves both scheduled deployments against a real Prefect server."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from prefect.client.orchestration import PrefectClient

from tests.flows.conftest import ROOT, stop


async def deployments(url: str) -> dict[str, object]:
    async with PrefectClient(api=url) as client:
        deps = await client.read_deployments()
        out = {}
        for d in deps:
            flow = await client.read_flow(d.flow_id)
            out[f"{flow.name}/{d.name}"] = d
        return out


async def data_eval_limit(url: str) -> object:
    from flows._common import DATA_EVAL_LIMIT

    async with PrefectClient(api=url) as client:
        return await client.read_global_concurrency_limit_by_name(DATA_EVAL_LIMIT)


@pytest.mark.slow
def test_deploy_serves_scheduled_deployments(workdir: Path, prefect_server: str) -> None:
    env = {**os.environ, "PREFECT_API_URL": prefect_server, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "flows.deploy"], env=env, cwd=workdir,
                            start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        found: dict[str, object] = {}
        while time.monotonic() < deadline and proc.poll() is None:
            found = asyncio.run(deployments(prefect_server))
            if len(found) >= 2:
                break
            time.sleep(1)
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
        assert set(found) == {"amc-retrain-and-promote/retrain-and-promote",
                              "amc-evaluate/evaluate"}
        crons = {k: [s.schedule.cron for s in d.schedules] for k, d in found.items()}
        assert crons == {"amc-retrain-and-promote/retrain-and-promote": ["0 3 * * 1"],
                         "amc-evaluate/evaluate": ["0 4 * * *"]}
        assert all(s.active for d in found.values() for s in d.schedules)
        assert {s.schedule.timezone for d in found.values() for s in d.schedules} == {"UTC"}
        # both write data/eval: one run at a time per deployment, later runs wait (ENQUEUE)
        for d in found.values():
            assert d.global_concurrency_limit is not None
            assert d.global_concurrency_limit.limit == 1
            assert str(d.concurrency_options.collision_strategy.value) == "ENQUEUE"
        shared = asyncio.run(data_eval_limit(prefect_server))
        assert (shared.limit, shared.active) == (1, True)
        proc.send_signal(signal.SIGTERM)  # a clean shutdown, not a kill
        assert proc.wait(timeout=60) == 0, proc.stderr.read().decode()[-2000:]
    finally:
        stop(proc)
