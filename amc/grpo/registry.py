"""The GRPO policy in MLflow: the run (params, curve, costs), the adapter, the registered model.

The run logs every option as a param, the training curve as step-indexed metrics (mean group
reward, KL, loss before and after the batch's updates), the costs as metrics, and the output
folder (adapter, curve.jsonl, metrics.json) as artifacts. The adapter folder is then registered
as a version of ``amc-policy-<env>``; :func:`amc.priors.adapter.resolve_adapter` turns its
``models:/`` URI back into a local folder for the ``hf`` prior.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from amc.grpo.config import GRPOOptions
from amc.grpo.trainer import ADAPTER_DIR, TrainResult
from amc.priors.adapter import ensure_policy_model

CURVE_METRICS = ("mean_reward", "reward_std", "kl", "loss", "loss_last", "clip_fraction",
                 "generated_tokens")
"""Per-step metrics logged to MLflow (their history is the training curve)."""


@dataclass(frozen=True)
class LoggedPolicy:
    """Where the logged policy lives."""

    run_id: str
    name: str
    version: str | None
    """None when not registered."""


def log_policy_run(opts: GRPOOptions, res: TrainResult) -> LoggedPolicy:
    """Log the finished run to the active tracking store and register its adapter."""
    import mlflow

    from amc.tracking import flatten_params, run_tags, setup_tracking

    setup_tracking(opts.tracking_uri, experiment="amc-grpo")
    out = Path(opts.out_dir)
    with mlflow.start_run(tags=run_tags({"stage": "grpo", "env": opts.env})) as run:
        mlflow.log_params(flatten_params(opts.model_dump(mode="json")))
        for row in res.curve:
            mlflow.log_metrics({k: row[k] for k in CURVE_METRICS if k in row},
                               step=int(row["step"]))
        mlflow.log_metrics({f"cost_{k}": float(v) for k, v in vars(res.costs).items()})
        mlflow.log_artifacts(str(out), artifact_path="policy")
        run_id = run.info.run_id
    name = opts.registered_name
    client = mlflow.MlflowClient()
    ensure_policy_model(client, name)
    source = f"{mlflow.get_run(run_id).info.artifact_uri}/policy/{ADAPTER_DIR}"
    mv = client.create_model_version(
        name, source, run_id=run_id, tags={"kind": "grpo", "base_model": opts.model},
        description=f"GRPO policy ({opts.env}), {len(res.curve)} rounds"
                    + (f", from {opts.init_adapter}" if opts.init_adapter else ""))
    return LoggedPolicy(run_id, name, str(mv.version))

