"""Head-only training of the value model on cached frozen-encoder features (``mode: head``).

Full fine-tuning runs the encoder forward and backward for every state in every epoch: a few
states per second on a CPU. With the backbone frozen, the pooled vector of a state never
changes, so each state is embedded once (:mod:`amc.value.features`, cached on disk) and the
epochs only train the small head on a (states, hidden) float32 matrix: milliseconds per epoch.

The result is the same artefact as full mode -- the whole :class:`ValueModel` (pretrained
backbone + trained head) saved, logged as a pyfunc and registered -- so ``LearnedValue`` and the
pyfunc score a state exactly as ``head(pool(state))`` did here. Metrics, early stopping on
validation Pearson (best epoch restored) and seeding follow full mode; MLflow also gets the
embedding time, cache hits and states/s.

Head mode's options (``head.objective``, ``head.temperature``): a within-(task, step) ranking
or advantage term beside the regression loss, trained on batches of whole groups
(:mod:`amc.value.ranking`; early stopping on ``objective.select_on``), and a resampling
temperature fitted on the validation split after training, stored in the model's metrics as
``resample_temperature`` (:mod:`amc.value.temperature`). Defaults: plain regression, no fit.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from amc.value.features import EmbedStats, FeatureCache, embed_texts, encoder_identity
from amc.value.metrics import finite, state_groups, value_metrics
from amc.value.ranking import ObjectiveConfig, group_batches, group_ids, objective_loss
from amc.value.temperature import TemperatureConfig, fit_temperature
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

if TYPE_CHECKING:
    from amc.value.model import ValueModel


@dataclass
class SplitFeatures:
    """One split: features (n, hidden) and the label columns (text, target, ...)."""

    x: np.ndarray
    cols: dict[str, Any]

    def metrics(self, pred: np.ndarray) -> dict[str, float]:
        """All value metrics of predictions on this split (empty when the split is)."""
        if not len(pred):
            return {}
        return value_metrics(pred, np.array(self.cols["target"]),
                             np.array(self.cols["reward_so_far"]), np.array(self.cols["success"]),
                             state_groups(self.cols))


def head_predict(model: ValueModel, x: np.ndarray, batch: int = 4096) -> np.ndarray:
    """Values (after the loss's link) of the head on pooled features, shape (n,)."""
    out = []
    with torch.inference_mode():
        for b in range(0, len(x), batch):
            xb = np.ascontiguousarray(x[b: b + batch], dtype=np.float32)
            raw = model.head(torch.from_numpy(xb)).squeeze(-1)
            out.append(model.to_value(raw).float().numpy())
    return np.concatenate(out) if out else np.zeros(0)


def _batches(n: int, gid: torch.Tensor, cfg: TrainConfig,
             g: torch.Generator) -> list[torch.Tensor]:
    """One epoch's index batches: shuffled rows (regression) or whole (task, step) groups."""
    if cfg.head.objective.kind == "regression":
        order = torch.randperm(n, generator=g)
        return [order[b: b + cfg.head.batch_size] for b in range(0, n, cfg.head.batch_size)]
    return list(group_batches(gid.numpy(), cfg.head.objective.groups_per_batch, g))


def _epoch(model: ValueModel, opt: Any, sched: Any, x: torch.Tensor, y: torch.Tensor,
           batches: list[torch.Tensor], gid: torch.Tensor,
           cfg: TrainConfig) -> tuple[np.ndarray, float]:
    """One pass over the index ``batches``; (training predictions, mean loss)."""
    model.head.train()
    preds = np.zeros(len(y))
    losses = []
    for idx in batches:
        raw = model.head(x[idx]).squeeze(-1)
        loss = objective_loss(cfg.head.objective, model.loss(raw, y[idx]), raw, y[idx], gid[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.head.parameters(), cfg.max_grad_norm)
        opt.step()
        sched.step()
        preds[idx.numpy()] = model.to_value(raw.detach()).numpy()
        losses.append(float(loss.detach()))
    model.head.eval()
    return preds, float(np.mean(losses))


def fit_head(model: ValueModel, train: SplitFeatures, val: SplitFeatures, cfg: TrainConfig,
             log: Any = None, progress: bool = True) -> tuple[list[dict[str, float]], int]:
    """Train ``model.head`` on features; early stopping on validation Pearson, best restored.

    The head trains on standardised features (per-dimension mean and scale of the training
    split; raw pooled features are small and anisotropic), then the affine map is folded into
    its first linear layer, so the saved head reads raw pooled features as the model does.
    ``log(metrics, step)`` receives each epoch's ``train_*``/``val_*`` metrics. Returns
    (history, best epoch). Seeded by ``cfg.seed`` (shuffling by a dedicated generator).
    """
    mu, sd = standardiser(train.x)
    std_train = SplitFeatures((train.x - mu) / sd, train.cols)
    std_val = SplitFeatures((val.x - mu) / sd, val.cols)
    history, best_epoch = _fit(model, std_train, std_val, cfg, log, progress)
    first = model.head[0]
    assert isinstance(first, torch.nn.Linear)
    fold_standardiser(first, mu, sd)
    return history, best_epoch


def standardiser(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-dimension (mean, scale) of features (n, hidden); a constant dimension gets scale 1."""
    mu = x.mean(0, dtype=np.float64)
    sd = x.std(0, dtype=np.float64)
    return mu.astype(np.float32), np.where(sd > 1e-6, sd, 1.0).astype(np.float32)


def fold_standardiser(linear: torch.nn.Linear, mu: np.ndarray, sd: np.ndarray) -> None:
    """Make ``linear(x)`` equal the old ``linear((x - mu) / sd)``: W' = W / sd, b' = b - W' mu."""
    with torch.no_grad():
        w = linear.weight / torch.from_numpy(sd)  # (out, hidden) / (hidden,)
        linear.weight.copy_(w)
        linear.bias.sub_(w @ torch.from_numpy(mu))


def _fit(model: ValueModel, train: SplitFeatures, val: SplitFeatures, cfg: TrainConfig,
         log: Any, progress: bool) -> tuple[list[dict[str, float]], int]:
    from tqdm.auto import tqdm
    from transformers import get_cosine_schedule_with_warmup

    h = cfg.head
    x = torch.from_numpy(np.ascontiguousarray(train.x, dtype=np.float32))
    y = torch.tensor(train.cols["target"], dtype=torch.float32)
    gid = torch.from_numpy(_group_ids(train, h.objective))
    g = torch.Generator().manual_seed(cfg.seed + 1)
    params = list(model.head.parameters())
    opt = torch.optim.AdamW(
        [{"params": [p for p in params if p.ndim >= 2], "weight_decay": cfg.weight_decay},
         {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0}], lr=h.lr)
    per_epoch = (math.ceil(len(y) / h.batch_size) if h.objective.kind == "regression" else
                 math.ceil((int(gid.max()) + 1) / h.objective.groups_per_batch))
    total = per_epoch * h.epochs
    sched = get_cosine_schedule_with_warmup(opt, int(cfg.warmup_ratio * total), total)
    history: list[dict[str, float]] = []
    best_score, best_epoch, bad, best_state = -math.inf, 0, 0, None
    bar = tqdm(range(1, h.epochs + 1), desc="head epochs", unit="epoch", disable=not progress,
               leave=False)
    for epoch in bar:
        preds, loss = _epoch(model, opt, sched, x, y, _batches(len(y), gid, cfg, g), gid, cfg)
        tr = {**train.metrics(preds), "loss": loss}
        va = val.metrics(head_predict(model, val.x))
        row = {"epoch": epoch, **finite(tr, "train_"), **finite(va, "val_")}
        history.append(row)
        if log is not None:
            log({k: v for k, v in row.items() if k != "epoch"}, epoch)
        score = va.get(h.objective.select_on, float("nan"))
        score = score if math.isfinite(score) else -math.inf
        bar.set_postfix(loss=f"{loss:.4f}", val=f"{score:.3f}")
        if best_state is None or not len(val.x) or score > best_score + cfg.min_delta:
            best_score, best_epoch, bad = score, epoch, 0
            best_state = {k: v.detach().clone() for k, v in model.head.state_dict().items()}
        else:
            bad += 1
            if bad > h.patience:
                break
    bar.close()
    if best_state is not None:
        model.head.load_state_dict(best_state)
    return history, best_epoch


def _group_ids(split: SplitFeatures, objective: ObjectiveConfig) -> np.ndarray:
    """Dense (task, step) group ids of a split's rows (zeros when regression needs none)."""
    groups = state_groups(split.cols)
    if groups is None:
        if objective.kind != "regression":
            raise ValueError(f"head.objective.kind={objective.kind!r} needs the dataset's "
                             "task_id and step columns")
        return np.zeros(len(split.x), dtype=np.int64)
    return group_ids(groups)


def fit_resample_temperature(pred: np.ndarray, split: SplitFeatures,
                             cfg: TemperatureConfig) -> dict[str, float]:
    """The resampling temperature fitted on a split's predictions (:mod:`amc.value.temperature`)
    as metrics stored with the model; empty when the split has no mixed (task, step) group."""
    groups = state_groups(split.cols)
    if groups is None or not len(pred):
        return {}
    v = pred + np.asarray(split.cols["reward_so_far"], float)
    try:
        fit = fit_temperature(v, np.asarray(split.cols["success"], bool), groups, cfg)
    except ValueError:
        return {}
    return {"resample_temperature": fit.temperature, "val_group_log_loss_fitted": fit.log_loss,
            "val_group_log_loss_uniform": fit.uniform_log_loss,
            "resample_temperature_groups": float(fit.groups),
            "resample_temperature_at_bound": float(fit.at_bound)}


def frozen_model(cfg: TrainConfig) -> ValueModel:
    """The configured model (pretrained backbone, seeded head), backbone frozen, eval mode."""
    from amc.value.model import build_model

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.seed)  # LoRA init of a decoder (kept untrained); restored on exit
        model = build_model(cfg.model, torch.Generator().manual_seed(cfg.seed))
    model.requires_grad_(False)
    model.head.requires_grad_(True)
    return model.eval()


def embed_splits(model: ValueModel, tok: Any, splits: dict[str, dict[str, Any]],
                 cfg: TrainConfig, progress: bool = True) -> tuple[dict[str, SplitFeatures],
                                                                   EmbedStats]:
    """Features of every split through one cache; the summed embedding statistics."""
    cache = FeatureCache(cfg.head.cache_dir, encoder_identity(model, tok))
    total = EmbedStats()
    out = {}
    for name, cols in splits.items():
        x, st = embed_texts(model, tok, cols["text"], cache, cfg.head.embed_batch_size,
                            cfg.head.shard_size, progress, desc=f"embed {name}")
        out[name] = SplitFeatures(x, cols)
        for f in ("states", "unique", "cache_hits", "embedded", "seconds", "cpu_seconds"):
            setattr(total, f, getattr(total, f) + getattr(st, f))
    return out, total


def train_head(dataset_dir: str | Path, cfg: TrainConfig,
               out_dir: str | Path | None = None, progress: bool = True) -> TrainResult:
    """Head-mode counterpart of :func:`amc.value.train.train` (same result and artefact)."""
    from amc.value.data import load_dataset_dir
    from amc.value.model import load_tokenizer_for

    dsd, render, card = load_dataset_dir(dataset_dir)
    splits = {"train": columns(dsd["train"], cfg.max_train_rows),
              "validation": columns(dsd["validation"], cfg.max_eval_rows),
              "test": columns(dsd["test"], cfg.max_eval_rows)}
    if not splits["train"]["text"]:
        raise ValueError(f"dataset {dataset_dir} has no training rows")
    check_budget(render, cfg.model.max_length)
    out = output_dir(out_dir)
    tok = load_tokenizer_for(cfg.model)
    model = frozen_model(cfg)
    run = start_run(cfg, card, render) if cfg.track else None
    feats, st = embed_splits(model, tok, splits, cfg, progress)
    embed = {"embed_seconds": st.seconds, "embed_cpu_seconds": st.cpu_seconds,
             "embed_cache_hits": float(st.cache_hits),
             "embed_new_states": float(st.embedded), "embed_states_per_s": st.states_per_s}
    log = None
    if run is not None:
        import mlflow

        mlflow.log_metrics(embed)
        log = mlflow.log_metrics
    t0, c0 = time.perf_counter(), time.process_time()
    history, best_epoch = fit_head(model, feats["train"], feats["validation"], cfg, log, progress)
    seconds, cpu_seconds = time.perf_counter() - t0, time.process_time() - c0
    val_pred = head_predict(model, feats["validation"].x)
    if cfg.head.temperature.fit:
        extra_t = fit_resample_temperature(val_pred, feats["validation"], cfg.head.temperature)
    else:
        extra_t = {}
    ev = FinalEval(feats["validation"].metrics(val_pred), val_pred.tolist(), splits["validation"],
                   feats["test"].metrics(head_predict(model, feats["test"].x)))
    n_seen = len(history) * len(feats["train"].x)
    extra = {**embed, "head_seconds": seconds, "head_cpu_seconds": cpu_seconds,
             "train_samples_per_s": n_seen / seconds if seconds else 0.0, **extra_t}
    return finish_run(model, tok, cfg, out, render, card, history, best_epoch, run, ev, extra)
