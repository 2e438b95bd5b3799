"""Head mode end to end: it learns the synthetic target, a rerun embeds nothing, MLflow holds
the usual metrics plus the embedding ones, and the registered model (LearnedValue and pyfunc)
scores states exactly as the trained head does on the cached features. Also the nested subsets
and the quality-vs-size report, and the calibration error."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from amc.value.features import FeatureCache, HeadConfig, embed_texts, encoder_identity
from amc.value.metrics import (
    auc_within_by_step,
    calibration_error,
    roc_auc,
    value_metrics,
    within_group_auc,
)
from amc.value.scale import nested_order, quality_vs_size
from amc.value.train import train
from amc.value.train_head import head_predict

ENV = "textcraft-head"  # its own registry name: the shared store's textcraft alias stays put


@pytest.fixture(scope="module")
def head_cfg(train_cfg, mlflow_uri: str, tmp_path_factory: pytest.TempPathFactory):
    head = HeadConfig(cache_dir=tmp_path_factory.mktemp("feature-cache"), shard_size=64)
    return train_cfg.model_copy(update={"mode": "head", "head": head, "env": ENV,
                                        "tracking_uri": mlflow_uri})


@pytest.fixture(scope="module")
def head_run(dataset_dir: Path, head_cfg, tmp_path_factory: pytest.TempPathFactory):
    return train(dataset_dir, head_cfg, tmp_path_factory.mktemp("head-run"))


@pytest.mark.slow
def test_head_mode_learns_the_synthetic_target(head_run, min_val_pearson: float) -> None:
    assert head_run.best["best_val_pearson"] >= min_val_pearson  # observed ~0.86
    first = head_run.history[0]
    best = head_run.history[head_run.best_epoch - 1]
    assert best["val_mse"] < 0.5 * first["val_mse"]
    assert head_run.best["embed_new_states"] > 0 and head_run.best["embed_cache_hits"] == 0


@pytest.mark.slow
def test_rerun_embeds_nothing_and_is_reproducible(head_run, dataset_dir: Path, head_cfg,
                                                  tmp_path: Path) -> None:
    again = train(dataset_dir, head_cfg.model_copy(update={"track": False}), tmp_path)
    assert again.best["embed_new_states"] == 0
    assert again.best["embed_cache_hits"] == head_run.best["embed_new_states"]
    assert again.history == head_run.history
    other = train(dataset_dir, head_cfg.model_copy(update={"track": False, "seed": 8}),
                  tmp_path / "other")
    assert other.history != head_run.history


@pytest.mark.slow
def test_mlflow_has_epoch_and_embedding_metrics(head_run, mlflow_uri: str) -> None:
    import mlflow

    client = mlflow.MlflowClient(mlflow_uri)
    run = client.get_run(head_run.run_id)
    assert run.data.params["train.mode"] == "head"
    steps = client.get_metric_history(head_run.run_id, "val_pearson")
    assert [m.step for m in steps] == list(range(1, len(head_run.history) + 1))
    for key in ("train_mse", "val_auc", "val_ece", "best_val_pearson", "embed_seconds",
                "embed_cpu_seconds", "embed_cache_hits", "embed_new_states",
                "embed_states_per_s", "head_seconds", "head_cpu_seconds"):
        assert key in run.data.metrics, key
    mv = client.get_model_version_by_alias(f"amc-value-{ENV}", "challenger")
    assert head_run.registered == (f"amc-value-{ENV}", str(mv.version))


@pytest.mark.slow
def test_registered_model_scores_as_the_trained_head(head_run, dataset_dir: Path, head_cfg,
                                                     mlflow_uri: str) -> None:
    import mlflow
    import pandas as pd

    from amc.value.data import load_dataset_dir
    from amc.value.scorers import LearnedValue

    texts = list(load_dataset_dir(dataset_dir)[0]["validation"]["text"])
    uri = f"models:/amc-value-{ENV}@challenger"
    value = LearnedValue.load(uri, tracking_uri=mlflow_uri, device="cpu", cache_size=0)
    mlflow.set_tracking_uri(mlflow_uri)
    pyfunc = mlflow.pyfunc.load_model(uri).predict(pd.DataFrame({"text": texts}))
    # The loaded backbone is the training encoder: its features come from the cache, unchanged.
    cache = FeatureCache(head_cfg.head.cache_dir, encoder_identity(value.model, value.tokenizer))
    feats, st = embed_texts(value.model, value.tokenizer, texts, cache, progress=False)
    assert st.embedded == 0
    expected = head_predict(value.model, feats)
    np.testing.assert_allclose(value.score_texts(texts), expected, atol=1e-5)
    np.testing.assert_allclose(pyfunc["raw"], expected, atol=1e-5)  # unclipped head output
    assert np.std(expected) > 0.1  # a trained head, not a constant


def test_nested_order_groups_trajectories_and_is_seeded() -> None:
    cols = {"task_id": ["a", "a", "a", "b", "b", "c", "c", "c", "c"],
            "traj": [0, 0, 1, 0, 0, 0, 0, 1, 1]}
    order = nested_order(cols, seed=0)
    assert sorted(order.tolist()) == list(range(9))
    keys = [(cols["task_id"][i], cols["traj"][i]) for i in order]
    runs = [k for j, k in enumerate(keys) if j == 0 or keys[j - 1] != k]
    assert len(runs) == len(set(keys)) == 5  # each trajectory is one contiguous block
    within = [i for i in order if (cols["task_id"][i], cols["traj"][i]) == ("c", 1)]
    assert within == [7, 8]  # steps keep their stored order
    assert np.array_equal(order, nested_order(cols, seed=0))
    assert any(not np.array_equal(order, nested_order(cols, seed=s)) for s in range(1, 5))


@pytest.mark.slow
def test_quality_vs_size_report(dataset_dir: Path, head_cfg, tmp_path: Path,
                                mlflow_uri: str) -> None:
    import mlflow

    cfg = head_cfg.model_copy(update={"experiment": "test-value-scale"})
    report = quality_vs_size(dataset_dir, [16, 64, 10**6], cfg, tmp_path, progress=False)
    n_train = report["train_states_available"]
    assert [r["train_states"] for r in report["rows"]] == [16, 64, n_train]
    assert report["held_out"] == "validation"  # the fixture's dataset has no test split
    saved = json.loads((tmp_path / "quality_vs_size.json").read_text())
    assert saved["rows"] == report["rows"] and (tmp_path / "quality_vs_size.png").stat().st_size
    full = report["rows"][-1]
    assert full["pearson"] >= 0.6 and 0 <= full["ece"] <= 1 and full["auc"] >= 0.8
    client = mlflow.MlflowClient(mlflow_uri)
    exp = client.get_experiment_by_name("test-value-scale")
    runs = client.search_runs([exp.experiment_id])
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    assert len(parents) == 1 and len(children) == 3
    assert {c.data.tags["mlflow.parentRunId"] for c in children} == {parents[0].info.run_id}
    assert sorted(int(c.data.params["train_states"]) for c in children) == [16, 64, n_train]
    assert all("heldout_pearson" in c.data.metrics for c in children)


def test_calibration_error() -> None:
    p = np.array([0.1, 0.1, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9])
    y = np.array([0, 0, 1, 1, 1, 1, 1, 1, 1, 0], bool)
    # bin 0.1: |0.1 - 0| * 2; bin 0.9: |0.9 - 7/8| * 8 -> (0.2 + 0.2) / 10
    assert calibration_error(p, y) == pytest.approx(0.04)
    assert calibration_error(np.ones(4), np.array([1, 0, 1, 0], bool)) == pytest.approx(0.5)
    assert np.isnan(calibration_error(np.zeros(0), np.zeros(0, bool)))


@pytest.mark.slow
def test_row_limits_bound_what_is_embedded_and_subsampled(dataset_dir: Path, head_cfg,
                                                          tmp_path: Path) -> None:
    from amc.value.data import load_dataset_dir

    dsd = load_dataset_dir(dataset_dir)[0]
    cfg = head_cfg.model_copy(update={
        "track": False, "max_train_rows": 20, "max_eval_rows": 8,
        "head": head_cfg.head.model_copy(update={"cache_dir": tmp_path / "cache"})})
    res = train(dataset_dir, cfg, tmp_path / "run")
    wanted = set(dsd["train"]["text"][:20]) | set(dsd["validation"]["text"][:8])
    assert res.best["embed_new_states"] == len(wanted) < len(set(dsd["validation"]["text"]))
    report = quality_vs_size(dataset_dir, [5, 10**6], cfg.model_copy(update={"max_train_rows": 40}),
                             tmp_path / "q", progress=False)
    assert report["train_states_available"] == 40
    assert [r["train_states"] for r in report["rows"]] == [5, 40]


def test_within_group_auc_ignores_between_group_ranking() -> None:
    # Group a scores high, group b low; within each, the success is ranked first.
    scores = np.array([0.9, 0.8, 0.2, 0.1])
    labels = np.array([1, 0, 1, 0], bool)
    groups = [("a", 1), ("a", 1), ("b", 1), ("b", 1)]
    assert within_group_auc(scores, labels, groups) == pytest.approx(1.0)
    # the plain AUC also counts (a fail 0.8) above (b success 0.2): 3 of 4 pairs
    assert roc_auc(scores, labels) == pytest.approx(0.75)
    flipped = np.array([0.8, 0.9, 0.1, 0.2])  # within each group the failure is ranked first
    assert within_group_auc(flipped, labels, groups) == 0.0
    assert roc_auc(flipped, labels) == pytest.approx(0.25)  # (a success 0.8) > (b fail 0.2)
    # ties count one half; single-class groups add nothing; pooled over groups by pair count
    assert within_group_auc(np.array([0.5, 0.5, 1, 0, 0]), np.array([1, 0, 1, 0, 0], bool),
                            ["x", "x", "y", "y", "y"]) == pytest.approx((0.5 + 2) / 3)
    assert np.isnan(within_group_auc(scores, np.array([1, 1, 0, 0], bool),
                                     ["a", "a", "b", "b"]))
    m = value_metrics(scores, labels.astype(float), np.zeros(4), labels, groups)
    assert m["auc_within"] == pytest.approx(1.0) and "auc_within" not in value_metrics(
        scores, labels.astype(float), np.zeros(4), labels)
    with pytest.raises(ValueError, match="equal length"):
        within_group_auc(scores, labels, groups[:3])
    # by step: each step's states grouped by task; a step with one class is left out
    cols = [("a", 1), ("a", 1), ("a", 2), ("a", 2)]
    by = auc_within_by_step(np.array([0.9, 0.1, 0.1, 0.9]), np.zeros(4),
                            np.array([1, 0, 1, 0], bool), cols)
    assert by == {"1": 1.0, "2": 0.0}
    assert auc_within_by_step(np.ones(4), np.zeros(4), np.array([1, 1, 0, 0], bool), cols) == {}
