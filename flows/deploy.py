"""Serve the scheduled deployments: retraining + promotion, and evaluation, on cron schedules.

Start a Prefect server on the loopback interface, point the client at it and serve::

    prefect server start --host 127.0.0.1 --port 4200 &
    export PREFECT_API_URL=http://127.0.0.1:4200/api
    python -m flows.deploy            # long-running: polls for scheduled and manual runs

Both deployments then appear, scheduled, in the UI (http://127.0.0.1:4200/deployments), where
a run can also be started by hand (``prefect deployment run 'amc-evaluate/evaluate'``). The
cron expressions come from ``flows.retrain_cron`` / ``flows.evaluate_cron`` in params.yaml.
"""

from __future__ import annotations

import os
from typing import Any

from flows._common import params
from flows.evaluate import evaluate_flow
from flows.retrain_and_promote import retrain_and_promote

RETRAIN = "retrain-and-promote"
EVALUATE = "evaluate"


def deployments(params_path: str = "params.yaml") -> list[Any]:
    """The two scheduled deployments (not yet registered)."""
    p = params(params_path)
    path = os.path.abspath(params_path)  # the served flows may run from another directory
    return [
        retrain_and_promote.to_deployment(
            name=RETRAIN, cron=p.flows.retrain_cron, tags=["amc", "retrain"],
            parameters={"params_path": path},
            description="collect -> dataset -> train -> evaluate -> promote -> report"),
        evaluate_flow.to_deployment(
            name=EVALUATE, cron=p.flows.evaluate_cron, tags=["amc", "evaluate"],
            parameters={"params_path": path},
            description="challenger vs champion and the baselines on the test split"),
    ]


def main() -> None:
    """Register and serve both deployments until interrupted."""
    from prefect import serve

    serve(*deployments(os.environ.get("AMC_PARAMS", "params.yaml")))


if __name__ == "__main__":
    main()
