"""Flow ``amc-drift-monitor``: check the champion on fresh rollouts; on drift, retrain.

:func:`amc.monitor.drift.monitor` runs one check (fresh seed block, frozen tasks) and records
it (files, version tags, an ``amc-drift`` MLflow run). The flow publishes it as a markdown
artifact (key ``amc-drift``) and, when the check marks drift, starts a run of the retraining
deployment ``drift.trigger`` (default ``amc-retrain-and-promote/retrain-and-promote``, served
by ``flows/deploy.py``) with :func:`prefect.deployments.run_deployment` (``timeout=0``: the
monitor does not wait for it). The started flow run's id is recorded on the champion's version
(tag ``drift.triggered_run``) and in the artifact, so the UI links the drift to its retraining.

The scheduled ``evaluate`` deployment runs this flow after its evaluation
(``evaluate_flow(monitor_drift=True)``); the retraining flow's own evaluation never does, so a
retraining can never trigger itself.
"""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from amc.monitor import drift as lib
from flows._common import params
from flows._log import say


@task(name="drift-check", retries=1, retry_delay_seconds=5, cache_policy=NO_CACHE)
def check(params_path: str, overrides: list[str]) -> dict[str, Any]:
    """One drift check (resumable: a retry finishes the same check's rollouts)."""
    return lib.monitor(params(params_path, overrides))


@task(name="trigger-retraining", cache_policy=NO_CACHE)
def trigger(deployment: str, params_path: str) -> str:
    """Start a run of the retraining deployment; returns its flow-run id (does not wait)."""
    from prefect.deployments import run_deployment

    run = run_deployment(name=deployment, timeout=0, tags=["amc", "drift"])
    return str(run.id)


def tag_trigger(params_path: str, overrides: list[str], rec: dict[str, Any]) -> None:
    """Record the triggered run on the champion's version."""
    import mlflow

    params(params_path, overrides)  # the tracking URI of these params
    mlflow.MlflowClient().set_model_version_tag(rec["model"], rec["version"],
                                                "drift.triggered_run",
                                                str(rec.get("triggered_run")))


@flow(name="amc-drift-monitor", log_prints=False)
def drift_flow(params_path: str = "params.yaml", overrides: list[str] | None = None,
               trigger_retraining: bool = True) -> dict[str, Any]:
    """Check for drift; on drift start the retraining deployment; returns the check."""
    ov = list(overrides or [])
    p = params(params_path, ov)
    rec = check(params_path, ov)
    if rec["drift"] and trigger_retraining and p.drift.trigger:
        try:
            rec["triggered_run"] = trigger(p.drift.trigger, params_path)
            tag_trigger(params_path, ov, rec)
        except Exception as err:  # the drift stays marked; say loudly why nothing retrains
            rec["trigger_error"] = f"{type(err).__name__}: {err}"
            get_run_logger().error("drift marked but retraining not started: %s",
                                   rec["trigger_error"])
    md = lib.markdown(rec)
    if rec.get("triggered_run"):
        md += f"\nTriggered `{p.drift.trigger}`: flow run {rec['triggered_run']}\n"
    if rec.get("trigger_error"):
        md += f"\nTrigger failed: {rec['trigger_error']}\n"
    create_markdown_artifact(key="amc-drift", markdown=md,
                             description="drift" if rec["drift"] else "no drift")
    say(lib.line(rec))
    return rec


if __name__ == "__main__":
    drift_flow()
