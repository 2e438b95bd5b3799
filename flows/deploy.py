"""Serve the scheduled deployments: retraining + promotion, and evaluation, on cron schedules.

Start a Prefect server on the loopback interface, point the client at it and serve::

    prefect server start --host 127.0.0.1 --port 4200 &
    export PREFECT_API_URL=http://127.0.0.1:4200/api
    python -m flows.deploy            # long-running: polls for scheduled and manual runs

Both deployments then appear, scheduled, in the UI (http://127.0.0.1:4200/deployments), where
a run can also be started by hand (``prefect deployment run 'amc-evaluate/evaluate'``). The
cron expressions come from ``flows.retrain_cron`` / ``flows.evaluate_cron`` in params.yaml, read
in ``flows.timezone`` (UTC by default). SIGTERM or Ctrl-C stops serving cleanly (exit 0).

Both write ``data/eval``, so neither may overlap: each deployment runs one flow run at a time
(a run due while one is running waits: ``ENQUEUE``), and the evaluation of either holds the
one slot of the global concurrency limit ``amc-data-eval``, which :func:`main` creates.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from flows._common import DATA_EVAL_LIMIT, params
from flows.evaluate import evaluate_flow
from flows.retrain_and_promote import retrain_and_promote

RETRAIN = "retrain-and-promote"
EVALUATE = "evaluate"


def one_at_a_time() -> Any:
    """A deployment's concurrency: one run at a time; a run due meanwhile waits its turn."""
    from prefect.client.schemas.objects import ConcurrencyLimitConfig, ConcurrencyLimitStrategy

    return ConcurrencyLimitConfig(limit=1, collision_strategy=ConcurrencyLimitStrategy.ENQUEUE)


def deployments(params_path: str = "params.yaml") -> list[Any]:
    """The two scheduled deployments (not yet registered), one run at a time each."""
    from prefect.schedules import Cron

    p = params(params_path)
    path = os.path.abspath(params_path)  # the served flows may run from another directory
    return [
        retrain_and_promote.to_deployment(
            name=RETRAIN, schedules=[Cron(p.flows.retrain_cron, timezone=p.flows.timezone)],
            tags=["amc", "retrain"],
            concurrency_limit=one_at_a_time(),
            parameters={"params_path": path},
            description="collect -> dataset -> train -> evaluate -> promote -> report"),
        evaluate_flow.to_deployment(
            name=EVALUATE, schedules=[Cron(p.flows.evaluate_cron, timezone=p.flows.timezone)],
            tags=["amc", "evaluate"],
            concurrency_limit=one_at_a_time(),
            parameters={"params_path": path, "monitor_drift": True},
            description="challenger vs champion and the baselines on the test split, then "
                        "the drift monitor (retrains on drift)"),
    ]


async def ensure_data_eval_limit() -> None:
    """Create (or reset) the 1-slot global limit both deployments' evaluations hold."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitUpdate

    async with get_client() as client:
        await client.upsert_global_concurrency_limit_by_name(DATA_EVAL_LIMIT, 1)
        limit = await client.read_global_concurrency_limit_by_name(DATA_EVAL_LIMIT)
        if not limit.active:  # a deactivated limit would not limit anything
            await client.update_global_concurrency_limit(
                DATA_EVAL_LIMIT, GlobalConcurrencyLimitUpdate(active=True))


def main() -> None:
    """Create the shared limit, then register and serve both deployments until interrupted."""
    import asyncio

    from prefect import serve

    asyncio.run(ensure_data_eval_limit())
    stop_on_signals()
    try:
        serve(*deployments(os.environ.get("AMC_PARAMS", "params.yaml")))
    except KeyboardInterrupt:
        print("flows.deploy: stopped", file=sys.stderr)


def stop_on_signals() -> None:
    """SIGTERM (and SIGINT) end ``serve`` as Ctrl-C does: the runner's loop is interrupted,
    its deployments stop polling and the process exits 0 (before, both were ignored at
    shutdown and the process had to be killed)."""
    import signal

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, interrupt)


if __name__ == "__main__":
    main()
