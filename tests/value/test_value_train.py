"""Training: a learnable synthetic set reaches a stated validation Pearson, runs are
reproducible, MLflow holds params/metrics/plot/tags, LoRA decoders save adapter + head only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from amc.value.model import (
    ADAPTER_WEIGHTS,
    CONFIG_FILE,
    FULL_WEIGHTS,
    HEAD_WEIGHTS,
    CheckpointMismatchError,
    ModelConfig,
    load_model,
    predict_texts,
)
from amc.value.train import train

pytestmark = pytest.mark.slow


def test_learns_the_synthetic_target(trained, min_val_pearson: float) -> None:
    assert trained.best["best_val_pearson"] >= min_val_pearson
    assert trained.best["best_val_auc"] >= 0.8
    assert len(trained.history) >= 2 and trained.history[0]["epoch"] == 1
    assert (trained.model_dir / FULL_WEIGHTS).is_file()
    assert trained.samples_per_s > 0


def test_mlflow_run_has_config_metrics_plot_tags_and_alias(trained, mlflow_uri: str,
                                                           train_cfg) -> None:
    import mlflow

    client = mlflow.MlflowClient(mlflow_uri)
    run = client.get_run(trained.run_id)
    assert run.data.params["train.lr"] == str(train_cfg.lr)
    assert run.data.params["render.history_k"] == "2"
    assert run.data.tags["dataset_hash"] and run.data.tags.get("git_commit")
    steps = client.get_metric_history(trained.run_id, "val_pearson")
    assert [m.step for m in steps] == list(range(1, len(trained.history) + 1))
    for key in ("train_mse", "val_mae", "val_spearman", "val_auc", "val_brier", "best_val_pearson"):
        assert key in run.data.metrics
    arts = [a.path for a in client.list_artifacts(trained.run_id, "plots")]
    assert arts == ["plots/calibration.png"]
    mv = client.get_model_version_by_alias("amc-value-textcraft", "challenger")
    assert trained.registered == ("amc-value-textcraft", str(mv.version))


def test_same_seed_same_metrics(dataset_dir: Path, tmp_path: Path, train_cfg) -> None:
    cfg = train_cfg.model_copy(update={"track": False, "epochs": 1, "max_train_rows": 32})
    a = train(dataset_dir, cfg, tmp_path / "a")
    b = train(dataset_dir, cfg, tmp_path / "b")
    assert a.history == b.history
    c = train(dataset_dir, cfg.model_copy(update={"seed": 8}), tmp_path / "c")
    assert c.history != a.history


def test_lora_decoder_saves_adapter_and_head_only(dataset_dir: Path, tiny_decoder: Path,
                                                  tmp_path: Path, train_cfg) -> None:
    model_cfg = ModelConfig(backbone=str(tiny_decoder), pooling="last", max_length=64)
    cfg = train_cfg.model_copy(update={"model": model_cfg, "track": False, "epochs": 1,
                                       "max_train_rows": 32, "lr": 1e-3})
    res = train(dataset_dir, cfg, tmp_path)
    files = {p.name for p in res.model_dir.iterdir()}
    assert {ADAPTER_WEIGHTS, HEAD_WEIGHTS, CONFIG_FILE} <= files and FULL_WEIGHTS not in files
    model, tok, meta = load_model(res.model_dir)
    assert meta["use_lora"] and model.use_lora
    trainable = [n for n, p in model.named_parameters() if "lora_" in n]
    assert trainable and all("_proj" in n for n in trainable)
    texts = ["=== NOW ===\n[STATE] You walk into a dark stormy swamp.", "short"]
    again, _, _ = load_model(res.model_dir)
    assert predict_texts(model, tok, texts) == predict_texts(again, tok, texts)
    # A checkpoint whose adapter does not match the configured rank fails loudly.
    bad = tmp_path / "bad"
    bad.mkdir()
    for p in res.model_dir.iterdir():
        if p.is_file():
            (bad / p.name).write_bytes(p.read_bytes())
    (bad / "tokenizer").symlink_to(res.model_dir / "tokenizer")
    meta_bad = json.loads((bad / CONFIG_FILE).read_text())
    meta_bad["model"]["lora_r"] = 4
    (bad / CONFIG_FILE).write_text(json.dumps(meta_bad))
    with pytest.raises(CheckpointMismatchError, match="shape mismatch"):
        load_model(bad)
