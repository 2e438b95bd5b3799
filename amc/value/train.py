"""Training of the value model, tracked in MLflow.

Seeded end to end: the head is initialised from a ``torch.Generator``, batches are shuffled by
another, and dropout/LoRA initialisation draw from torch's global RNG inside
``torch.random.fork_rng`` after ``manual_seed(seed)`` (the caller's RNG state is restored), so
the same seed on the same machine gives the same metrics. AdamW with linear warmup and cosine
decay, gradient clipping, early stopping on validation Pearson (the best epoch's weights are
restored). CPU or GPU (bf16 autocast); several GPUs via ``accelerate launch``.

:func:`train` is the entry point of both modes: ``mode="full"`` runs the fine-tuning here,
``mode="head"`` hands over to :mod:`amc.value.train_head`. The config, the result and the
MLflow run both share are in :mod:`amc.value.train_run` (re-exported here: ``TrainConfig``,
``TrainResult``). MLflow (SQLite store, :mod:`amc.tracking`): the resolved config as params,
per-epoch train and validation MSE/MAE/Pearson/Spearman/AUC/Brier, a reliability plot artifact,
tags for the git commit and the dataset's content hash; the trained model is logged as a
pyfunc and registered as ``amc-value-<env>`` with the alias ``challenger``
(:mod:`amc.value.registry`).
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from amc.value.metrics import finite, state_groups, value_metrics
from amc.value.model import (
    build_model,
    encode,
    load_tokenizer_for,
    pad_batch,
    predict_ids,
    uses_lora,
)
from amc.value.train_head import train_head
from amc.value.train_run import (
    FinalEval,
    TrainConfig,
    TrainResult,
    check_budget,
    columns,
    finish_run,
    output_dir,
    start_run,
)

__all__ = ["TrainConfig", "TrainResult", "train"]


def _evaluate(model: Any, ids: list[list[int]], cols: dict[str, Any], pad_id: int,
              cfg: TrainConfig, device: torch.device,
              autocast: bool) -> tuple[dict[str, float], list[float]]:
    if not ids:
        return {}, []
    pred = predict_ids(model, ids, pad_id, cfg.eval_batch_size, device, autocast)
    return value_metrics(np.array(pred), np.array(cols["target"]), np.array(cols["reward_so_far"]),
                         np.array(cols["success"]), state_groups(cols)), pred


def train(dataset_dir: str | Path, cfg: TrainConfig = TrainConfig(),
          out_dir: str | Path | None = None) -> TrainResult:
    """Train on a dataset directory (:func:`amc.value.data.build_dataset`), save, log, register.

    An exception marks the MLflow run FAILED (instead of leaving it running) and propagates.
    """
    try:
        if cfg.mode == "head":
            return train_head(dataset_dir, cfg, out_dir)
        check_full_mode(cfg)
        return _train(dataset_dir, cfg, out_dir)
    except BaseException:
        if cfg.track:
            import mlflow

            if mlflow.active_run() is not None:
                mlflow.end_run("FAILED")
        raise


def check_full_mode(cfg: TrainConfig) -> None:
    """Full fine-tuning trains by regression on shuffled rows: a within-group objective or a
    fitted temperature (``head.objective``, ``head.temperature``) is head mode's only."""
    if cfg.head.objective.kind != "regression":
        raise ValueError(f"head.objective.kind={cfg.head.objective.kind!r} needs mode='head'")
    if cfg.head.temperature.fit:
        raise ValueError("head.temperature.fit needs mode='head'")


def _train(dataset_dir: str | Path, cfg: TrainConfig, out_dir: str | Path | None) -> TrainResult:
    from accelerate import Accelerator
    from transformers import get_cosine_schedule_with_warmup

    from amc.progress import progress_bar
    from amc.value.data import load_dataset_dir

    dsd, render, card = load_dataset_dir(dataset_dir)
    train_cols = columns(dsd["train"], cfg.max_train_rows)
    val_cols = columns(dsd["validation"], cfg.max_eval_rows)
    test_cols = columns(dsd["test"], cfg.max_eval_rows)
    if not train_cols["text"]:
        raise ValueError(f"dataset {dataset_dir} has no training rows")
    use_cuda = cfg.device == "cuda" or (cfg.device == "auto" and torch.cuda.is_available())
    acc = Accelerator(cpu=not use_cuda, mixed_precision="bf16" if use_cuda and cfg.bf16 else "no")
    device, autocast = acc.device, use_cuda and cfg.bf16
    out = output_dir(out_dir)
    max_len = cfg.model.max_length
    check_budget(render, max_len)
    tok = load_tokenizer_for(cfg.model)
    ids_train = encode(tok, train_cols["text"], max_len)
    ids_val = encode(tok, val_cols["text"], max_len) if val_cols["text"] else []
    ids_test = encode(tok, test_cols["text"], max_len) if test_cols["text"] else []
    y_train = torch.tensor(train_cols["target"], dtype=torch.float32)

    cuda_devs = [device.index or 0] if use_cuda else []
    with torch.random.fork_rng(devices=cuda_devs):
        torch.manual_seed(cfg.seed)  # dropout and LoRA init; restored on exit
        g_init = torch.Generator().manual_seed(cfg.seed)
        # A LoRA model's frozen base is loaded in bf16 on a GPU; full fine-tuning stays fp32.
        base_dtype = torch.bfloat16 if use_cuda and cfg.bf16 and uses_lora(cfg.model) else None
        model = build_model(cfg.model, g_init, base_dtype)
        g_shuffle = torch.Generator().manual_seed(cfg.seed + 1)
        order_loader: torch.utils.data.DataLoader[int] = torch.utils.data.DataLoader(
            range(len(ids_train)),  # type: ignore[arg-type]  # a range is a map-style dataset
            batch_size=cfg.batch_size, shuffle=True, generator=g_shuffle)
        params = [p for p in model.parameters() if p.requires_grad]
        decay = [p for p in params if p.ndim >= 2]
        no_decay = [p for p in params if p.ndim < 2]
        opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                                 {"params": no_decay, "weight_decay": 0.0}], lr=cfg.lr)
        steps_per_epoch = math.ceil(len(order_loader) / cfg.grad_accum)
        total = steps_per_epoch * cfg.epochs
        sched = get_cosine_schedule_with_warmup(opt, int(cfg.warmup_ratio * total), total)
        model, opt = acc.prepare(model, opt)
        raw_model = acc.unwrap_model(model)

        run = None
        if cfg.track and acc.is_main_process:
            run = start_run(cfg, card, render)
        history: list[dict[str, float]] = []
        best_score, best_epoch, bad = -math.inf, 0, 0
        best_state: dict[str, torch.Tensor] | None = None
        n_seen, t_train = 0, 0.0
        for epoch in range(1, cfg.epochs + 1):
            model.train()
            preds = np.full(len(ids_train), np.nan)  # this process's training predictions
            losses = []
            t0 = time.perf_counter()
            # a bar on a terminal, `train epoch 1/1: 40/120 steps, 31 s, ETA 62 s` lines in a
            # log (dvc repro, a flow), where tqdm would stay silent
            bar = progress_bar(len(order_loader), 0, f"train epoch {epoch}/{cfg.epochs}",
                               enabled=acc.is_main_process, unit="step")
            for i, idx in enumerate(order_loader):
                # Several processes (accelerate launch): each takes its share of the batch and
                # DDP averages the gradients, so the step equals one full-batch step.
                idx = idx[acc.process_index::acc.num_processes]
                idx_list = idx.tolist()
                x, m = pad_batch([ids_train[j] for j in idx_list], tok.pad_token_id)
                y = y_train[idx].to(device)
                with acc.autocast():
                    raw = model(x.to(device), m.to(device))
                loss = raw_model.loss(raw, y)
                acc.backward(loss / cfg.grad_accum)
                if (i + 1) % cfg.grad_accum == 0 or i + 1 == len(order_loader):
                    acc.clip_grad_norm_(params, cfg.max_grad_norm)
                    opt.step()
                    sched.step()
                    opt.zero_grad(set_to_none=True)
                preds[idx_list] = raw_model.to_value(raw.detach()).float().cpu().numpy()
                losses.append(float(loss.detach()))
                if hasattr(bar, "set_postfix"):  # the terminal's bar shows the running loss
                    bar.set_postfix(loss=f"{np.mean(losses[-20:]):.4f}", refresh=False)
                bar.update()
            bar.close()
            t_train += time.perf_counter() - t0
            n_seen += len(ids_train)
            seen = ~np.isnan(preds)
            tr = value_metrics(preds[seen], y_train.numpy()[seen],
                               np.array(train_cols["reward_so_far"])[seen],
                               np.array(train_cols["success"])[seen])
            tr["loss"] = float(np.mean(losses))
            va, _ = _evaluate(raw_model, ids_val, val_cols, tok.pad_token_id, cfg, device, autocast)
            row = {"epoch": epoch, **finite(tr, "train_"), **finite(va, "val_")}
            history.append(row)
            if run is not None:
                import mlflow

                mlflow.log_metrics({k: v for k, v in row.items() if k != "epoch"}, step=epoch)
            score = va.get("pearson", float("nan")) if va else float("nan")
            score = -math.inf if not math.isfinite(score) else score
            # Without a validation split the last epoch is kept.
            if best_state is None or not ids_val or score > best_score + cfg.min_delta:
                best_score, best_epoch, bad = score, epoch, 0
                best_state = {n: p.detach().clone() for n, p in raw_model.named_parameters()
                              if p.requires_grad}
            else:
                bad += 1
                if ids_val and bad > cfg.patience:
                    break
        if best_state is not None:  # restore the best epoch's weights
            with torch.no_grad():
                for n, p in raw_model.named_parameters():
                    if n in best_state:
                        p.copy_(best_state[n])
    acc.wait_for_everyone()
    if not acc.is_main_process:  # only the main process saves, logs and registers
        return TrainResult(out / "model", history, best_epoch, {})
    return _finish(raw_model, tok, cfg, out, render, card, history, best_epoch, run,
                   (ids_val, val_cols), (ids_test, test_cols), device, autocast,
                   n_seen / t_train if t_train else 0.0)


def _finish(model: Any, tok: Any, cfg: TrainConfig, out: Path, render: Any, card: dict[str, Any],
            history: list[dict[str, float]], best_epoch: int, run: Any,
            val: tuple[list[list[int]], dict[str, Any]],
            test: tuple[list[list[int]], dict[str, Any]],
            device: torch.device, autocast: bool, samples_per_s: float) -> TrainResult:
    """Final evaluation of the restored model on token ids, then :func:`finish_run`."""
    best, pred = _evaluate(model, val[0], val[1], tok.pad_token_id, cfg, device, autocast)
    test_m, _ = _evaluate(model, test[0], test[1], tok.pad_token_id, cfg, device, autocast)
    return finish_run(model, tok, cfg, out, render, card, history, best_epoch, run,
                      FinalEval(best, pred, val[1], test_m),
                      {"train_samples_per_s": samples_per_s})


