"""What every value-model training run shares: its config, its result and the run around it.

Full fine-tuning (:mod:`amc.value.train`) and head mode (:mod:`amc.value.train_head`) both take
a :class:`TrainConfig`, write into :func:`output_dir`, check the dataset's rendering budget
against the model's token limit (:func:`check_budget`), open their MLflow run with
:func:`start_run` (resolved config as params and a JSON artifact, tags for the git commit and
the dataset's content hash) and end it with :func:`finish_run`: save the model, write
``metrics.json`` (run times apart, in ``timing/``), log a reliability plot, the metrics and
the model (a pyfunc, registered as ``amc-value-<env>`` with the alias ``challenger`` unless
told not to) and return a
:class:`TrainResult`. Both trainers import this module; it imports neither.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field, model_validator

from amc.config import Frozen
from amc.value.features import HeadConfig
from amc.value.metrics import finite, reliability_plot
from amc.value.model import ModelConfig


class TrainConfig(Frozen):
    """Optimisation, tracking and registration settings of one training run."""

    model: ModelConfig = ModelConfig()
    """Backbone, pooling, head, LoRA and loss."""
    mode: Literal["full", "head"] = "full"
    """full: fine-tune the backbone (LoRA for decoders) and head; head: freeze the backbone,
    embed every state once into an on-disk cache and train only the head (CPU at scale)."""
    head: HeadConfig = HeadConfig()
    """Head-mode settings (lr, epochs, batch size, patience, feature cache); unused in full."""
    lr: float = Field(5e-5, gt=0)
    """Peak learning rate of AdamW (paper, 8B LoRA: 1e-5)."""
    weight_decay: float = Field(0.01, ge=0)
    """AdamW weight decay."""
    epochs: int = Field(3, ge=1)
    """Maximum number of epochs."""
    batch_size: int = Field(16, ge=1)
    """Training micro-batch size per device."""
    grad_accum: int = Field(1, ge=1)
    """Micro-batches per optimiser step."""
    eval_batch_size: int = Field(64, ge=1)
    """Batch size of evaluation."""
    warmup_ratio: float = Field(0.1, ge=0, le=1)
    """Fraction of optimiser steps with linear warmup."""
    max_grad_norm: float = Field(1.0, gt=0)
    """Gradient clipping norm."""
    patience: int = Field(1, ge=0)
    """Stop after this many epochs without a validation-Pearson gain of min_delta."""
    min_delta: float = Field(0.001, ge=0)
    """Smallest validation-Pearson gain that counts as an improvement."""
    seed: int = 0
    """Seed of initialisation, shuffling and dropout."""
    device: Literal["auto", "cpu", "cuda"] = "auto"
    """Where to train (auto = cuda when available)."""
    bf16: bool = True
    """bf16 autocast on GPU (ignored on CPU)."""
    max_train_rows: int | None = Field(None, ge=1)
    """Use only the first rows of the training split (quick runs)."""
    max_eval_rows: int | None = Field(None, ge=1)
    """Use only the first rows of the validation and test splits (quick side-by-side runs)."""
    env: str = "generic"
    """Environment name; the model registers as amc-value-<env>."""
    experiment: str = "amc-value"
    """MLflow experiment name."""
    tracking_uri: str | None = None
    """MLflow tracking URI (None: $MLFLOW_TRACKING_URI or sqlite:///mlruns/mlflow.db)."""
    track: bool = True
    """Log to MLflow (params, metrics, plot, model)."""
    register_model: bool = True
    """Register the logged model as amc-value-<env> with the alias challenger."""

    @model_validator(mode="after")
    def _frozen_int8(self) -> TrainConfig:
        if self.model.quantize != "none" and self.mode != "head":
            raise ValueError(f"model.quantize={self.model.quantize!r} needs mode='head' "
                             "(an int8 encoder cannot be fine-tuned)")
        return self


@dataclass
class TrainResult:
    """What a training run produced."""

    model_dir: Path
    history: list[dict[str, float]]
    best_epoch: int
    best: dict[str, float]
    run_id: str | None = None
    model_uri: str | None = None
    registered: tuple[str, str] | None = None  # (name, version)
    samples_per_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


def columns(ds: Any, limit: int | None = None) -> dict[str, Any]:
    if limit is not None:
        ds = ds.select(range(min(limit, len(ds))))
    keys = ("text", "target", "reward_so_far", "success", "task_id", "step")
    return {k: list(ds[k]) for k in keys if k in ds.column_names}


def output_dir(out_dir: str | Path | None) -> Path:
    """The run's output directory (a fresh temporary one when None)."""
    return Path(out_dir) if out_dir else Path(tempfile.mkdtemp(prefix="amc-value-"))


def check_budget(render: Any, max_len: int) -> None:
    """Fail when the model's token limit cannot hold the dataset's rendering budget."""
    if render.max_tokens is not None and render.max_tokens + 2 > max_len:
        raise ValueError(f"model.max_length={max_len} is too small for the dataset's "
                         f"render.max_tokens={render.max_tokens} (needs >= max_tokens + 2; "
                         f"build the dataset with model_max_length={max_len})")


def start_run(cfg: TrainConfig, card: dict[str, Any], render: Any) -> Any:
    import mlflow

    from amc.tracking import flatten_params, run_tags, setup_tracking

    setup_tracking(cfg.tracking_uri, cfg.experiment)
    run = mlflow.start_run(tags=run_tags({"dataset_hash": card["content_hash"], "env": cfg.env,
                                         "component": "value"}))
    params = flatten_params({"train": cfg.model_dump(mode="json"),
                             "render": render.model_dump(mode="json"),
                             "dataset": card["options"]})
    mlflow.log_params(params)
    mlflow.log_dict({"train": cfg.model_dump(mode="json"), "dataset_card": card},
                    "config/resolved.json")
    return run


TIMING_SUFFIXES = ("_seconds", "_per_s")
"""Metrics that time the run (seconds, throughput): kept out of the saved model's files, whose
bytes a rerun reproduces, in ``<out>/timing/train.json`` (and the MLflow run) instead."""


@dataclass
class FinalEval:
    """The best model's validation metrics and predictions, and its test metrics."""

    val: dict[str, float]
    val_pred: list[float]
    val_cols: dict[str, Any]
    test: dict[str, float]


def finish_run(model: Any, tok: Any, cfg: TrainConfig, out: Path, render: Any,
               card: dict[str, Any], history: list[dict[str, float]], best_epoch: int, run: Any,
               ev: FinalEval, extra: dict[str, float]) -> TrainResult:
    """Calibration plot, save, MLflow logging and registration (both modes)."""
    final = finite(ev.val, "best_val_")
    final.update(finite(ev.test, "test_"))
    final["best_epoch"] = float(best_epoch)
    final.update(extra)
    samples_per_s = extra.get("train_samples_per_s", 0.0)
    kept = {k: v for k, v in final.items() if not k.endswith(TIMING_SUFFIXES)}
    model_dir = model.save(out / "model", tok, extra={
        "render": render.model_dump(mode="json"), "env": cfg.env,
        "dataset_hash": card["content_hash"], "metrics": kept})
    (out / "metrics.json").write_text(json.dumps({"history": history, "final": kept}, indent=2))
    (out / "timing").mkdir(exist_ok=True)  # ignored by DVC (.dvcignore); MLflow logs it too
    (out / "timing" / "train.json").write_text(json.dumps(
        {k: v for k, v in final.items() if k not in kept}, indent=2))
    result = TrainResult(model_dir, history, best_epoch, final, samples_per_s=samples_per_s)
    if run is None:
        return result
    import mlflow

    from amc.value.registry import log_value_model

    try:
        if ev.val_pred:
            png = reliability_plot(np.array(ev.val_pred), np.array(ev.val_cols["reward_so_far"]),
                                   np.array(ev.val_cols["success"]), out / "calibration.png",
                                   title=f"Value calibration ({cfg.env}, validation)")
            mlflow.log_artifact(str(png), "plots")
        mlflow.log_artifact(str(out / "metrics.json"))
        examples = (ev.val_cols["text"] or [])[:2] or ["(example state)"]
        logged = log_value_model(model_dir, env=cfg.env, register=cfg.register_model,
                                 input_example=examples)
        # the run's final metrics, linked to the logged model (MLflow 3: models:/<model id>)
        model_id = logged.model_uri.removeprefix("models:/")
        mlflow.log_metrics(final, model_id=model_id if "/" not in model_id else None)
        result.run_id = run.info.run_id
        result.model_uri = logged.model_uri
        if logged.version is not None:
            result.registered = (logged.name, logged.version)
    finally:
        mlflow.end_run()
    return result
