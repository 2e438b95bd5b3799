"""The SFT run in MLflow: params, curve, costs, data hash, checkpoints, the registered adapter.

The run logs every option as a param, the training curve as step-indexed metrics (loss, and at
each checkpoint the held-out loss and greedy action accuracy), wall and CPU seconds and tokens
as metrics, the demonstrations' sha256 as a tag, and the output folder's adapters as artifacts.
The final adapter is registered as a version of ``amc-policy-<env>`` (the registry GRPO uses);
``models:/amc-policy-<env>/<version>`` then works as the ``hf`` prior's ``adapter`` and as
``amc grpo``'s ``init_adapter``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from amc.sft.config import SFTOptions
from amc.sft.loop import CHECKPOINTS, FINAL, SFTResult

CURVE_METRICS = ("loss", "val_loss", "val_action_acc", "val_loss_own", "val_action_acc_own",
                 "tokens")
"""Per-step metrics logged to MLflow (their history is the training curve)."""


@dataclass(frozen=True)
class LoggedSFT:
    """Where the logged adapter lives."""

    run_id: str
    name: str
    version: str


def log_sft_run(opts: SFTOptions, res: SFTResult, data_sha256: str, pairs: int) -> LoggedSFT:
    """Log the finished run to the tracking store and register its final adapter."""
    import mlflow

    from amc.tracking import flatten_params, run_tags, setup_tracking

    setup_tracking(opts.tracking_uri, experiment="amc-sft")
    out = Path(opts.out_dir)
    tags = run_tags({"stage": "sft", "env": opts.env, "data_sha256": data_sha256})
    with mlflow.start_run(run_name=f"sft {opts.env}", tags=tags) as run:
        mlflow.log_params(flatten_params(opts.model_dump(mode="json")))
        mlflow.log_param("pairs", pairs)
        for row in res.curve:
            mlflow.log_metrics({k: float(row[k]) for k in CURVE_METRICS if k in row},
                               step=int(row["step"]))
        mlflow.log_metrics({f"cost_{k}": float(v) for k, v in res.costs.items()})
        mlflow.log_artifacts(str(out / FINAL), artifact_path=f"policy/{FINAL}")
        if (out / CHECKPOINTS).is_dir():
            mlflow.log_artifacts(str(out / CHECKPOINTS), artifact_path=f"policy/{CHECKPOINTS}")
        run_id = run.info.run_id
    name = opts.registered_name
    client = mlflow.MlflowClient()
    from amc.priors.adapter import ensure_policy_model

    ensure_policy_model(client, name)
    source = f"{mlflow.get_run(run_id).info.artifact_uri}/policy/{FINAL}"
    steps = int(res.curve[-1]["step"]) if res.curve else 0
    mv = client.create_model_version(
        name, source, run_id=run_id, tags={"kind": "sft", "base_model": opts.model},
        description=f"SFT on {pairs} planner demonstrations ({opts.env}), {steps} steps; "
                    f"data sha256 {data_sha256[:12]}")
    return LoggedSFT(run_id, name, str(mv.version))
