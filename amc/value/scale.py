"""Value quality against training-set size (head mode, nested subsets, fixed held-out tasks).

How many labelled states does the value model need? Head mode makes the question cheap: the
whole dataset is embedded once (:mod:`amc.value.features`), then a fresh head is trained on
nested subsets of the training split -- the first n states of one seeded order of the training
*trajectories*, so a larger subset contains every smaller one and trajectories are never cut
in the middle except at the boundary -- and each is evaluated on the same held-out tasks (the
dataset's test split, or validation when there is no test split; early stopping always uses
validation). Reported per size: Pearson with the return-to-go, ROC AUC of success, expected
calibration error (ECE) and Brier score. One MLflow run per size under a parent run; a JSON
file and a plot for the evidence document.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from amc.plots import pyplot, save_png
from amc.value.metrics import auc_within_by_step, finite, state_groups

if TYPE_CHECKING:
    from amc.value.train_run import TrainConfig

REPORTED = ("pearson", "auc", "auc_within", "ece", "brier", "mse")


def nested_order(cols: dict[str, Any], seed: int) -> np.ndarray:
    """Row indices grouped by trajectory, trajectories in a seeded random order.

    Any prefix of it is a nested subset (prefix of n <= prefix of m for n <= m).
    """
    keys = list(zip(cols["task_id"], cols["traj"], strict=True))
    trajs = sorted(set(keys))
    perm = np.random.default_rng(seed).permutation(len(trajs))
    rank = {trajs[p]: r for r, p in enumerate(perm)}
    # Stable sort by trajectory rank keeps each trajectory's steps in their stored order.
    return np.array(sorted(range(len(keys)), key=lambda i: rank[keys[i]]), dtype=np.int64)


def _subset(cols: dict[str, Any], idx: np.ndarray) -> dict[str, Any]:
    return {k: [v[i] for i in idx] for k, v in cols.items()}


def quality_vs_size(dataset_dir: str | Path, sizes: list[int], cfg: TrainConfig,
                    out_dir: str | Path, progress: bool = True) -> dict[str, Any]:
    """Train head mode on nested training subsets of ``sizes`` states; JSON + plot + MLflow.

    Subsets are drawn from the first ``cfg.max_train_rows`` training rows (all when None).
    Sizes larger than that pool are dropped (the whole pool is added instead once).
    Returns the written report (also ``out_dir/quality_vs_size.json``).
    """
    from amc.value.data import load_dataset_dir
    from amc.value.model import load_tokenizer_for
    from amc.value.train_head import SplitFeatures, embed_splits, frozen_model
    from amc.value.train_run import check_budget

    dsd, render, card = load_dataset_dir(dataset_dir)
    check_budget(render, cfg.model.max_length)
    keys = ("text", "target", "reward_so_far", "success", "task_id", "traj", "step")
    splits = {s: {k: list(dsd[s][k]) for k in keys} for s in ("train", "validation", "test")}
    # ``max_train_rows`` bounds the pool the subsets are drawn from (what train() would embed).
    splits["train"] = {k: v[: cfg.max_train_rows] for k, v in splits["train"].items()}
    held_name = "test" if splits["test"]["text"] else "validation"
    tok = load_tokenizer_for(cfg.model)
    model = frozen_model(cfg)
    feats, stats = embed_splits(model, tok, splits, cfg, progress)
    n_train = len(splits["train"]["text"])
    order = nested_order(splits["train"], cfg.seed)
    todo = sorted({min(int(n), n_train) for n in sizes if n >= 1})
    head0 = {k: v.clone() for k, v in model.head.state_dict().items()}
    rows = []
    parent = _start_parent(cfg, card, todo) if cfg.track else None
    try:
        for n in todo:
            idx = order[:n]
            sub = SplitFeatures(feats["train"].x[idx], _subset(splits["train"], idx))
            model.head.load_state_dict(head0)  # every size starts from the same seeded head
            rows.append(_one_size(model, sub, feats, held_name, cfg, n, parent is not None,
                                  progress))
    finally:
        if parent is not None:
            import mlflow

            mlflow.end_run()
    report = {"dataset_hash": card["content_hash"], "held_out": held_name,
              "held_out_states": len(splits[held_name]["text"]),
              "held_out_tasks": len(set(splits[held_name]["task_id"])),
              "train_states_available": n_train, "embed_seconds": stats.seconds,
              "head": cfg.head.model_dump(mode="json", exclude={"cache_dir"}),
              "model": cfg.model.model_dump(mode="json"), "rows": rows}
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "quality_vs_size.json").write_text(json.dumps(report, indent=2))
    plot_quality(rows, out / "quality_vs_size.png",
                 f"Value quality vs dataset size (head mode, held-out {held_name} tasks)")
    if parent is not None:
        import mlflow

        with mlflow.start_run(run_id=parent.info.run_id):
            mlflow.log_artifact(str(out / "quality_vs_size.json"))
            mlflow.log_artifact(str(out / "quality_vs_size.png"), "plots")
    return report


def _start_parent(cfg: TrainConfig, card: dict[str, Any], sizes: list[int]) -> Any:
    import mlflow

    from amc.tracking import flatten_params, run_tags, setup_tracking

    setup_tracking(cfg.tracking_uri, cfg.experiment)
    run = mlflow.start_run(run_name="value-quality-vs-size", tags=run_tags(
        {"dataset_hash": card["content_hash"], "env": cfg.env, "component": "value-scale"}))
    mlflow.log_params(flatten_params({"train": cfg.model_dump(mode="json"),
                                      "sizes": ",".join(map(str, sizes))}))
    return run


def _one_size(model: Any, sub: Any, feats: dict[str, Any], held_name: str, cfg: TrainConfig,
              n: int, track: bool, progress: bool) -> dict[str, Any]:
    """Train the head on one subset; held-out metrics (logged as a nested run when tracking)."""
    from amc.value.train_head import fit_head, head_predict

    log = None
    if track:
        import mlflow

        mlflow.start_run(run_name=f"n={n}", nested=True)
        mlflow.log_param("train_states", n)
        log = mlflow.log_metrics
    try:
        history, best_epoch = fit_head(model, sub, feats["validation"], cfg, log, progress)
        h = feats[held_name]
        pred = head_predict(model, h.x)
        held = h.metrics(pred)
        row = {"train_states": n, "train_tasks": len(set(sub.cols["task_id"])),
               "best_epoch": best_epoch, "epochs": len(history),
               **{k: held.get(k, float("nan")) for k in REPORTED},
               "auc_within_by_step": auc_within_by_step(
                   pred, np.array(h.cols["reward_so_far"]), np.array(h.cols["success"]),
                   state_groups(h.cols) or [])}
        if track:
            mlflow.log_metrics({**finite(held, "heldout_"), "best_epoch": float(best_epoch)})
    finally:
        if track:
            mlflow.end_run()
    return row


def plot_quality(rows: list[dict[str, Any]], out: str | Path, title: str | None = None) -> Path:
    """Held-out Pearson, AUC of success and ECE against training states (log x axis), one
    reproducible PNG (:mod:`amc.plots`): the rows of :func:`quality_vs_size` or the evidence
    sweep's value-quality curve."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    n = [r["train_states"] for r in rows]
    for key in ("pearson", "auc", "ece"):
        ax.plot(n, [r[key] for r in rows], marker="o", label=key)
    ax.set_xscale("log")
    ax.set_xlabel("training states")
    ax.set_ylabel("held-out metric")
    if title is not None:
        ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    return save_png(fig, out)
