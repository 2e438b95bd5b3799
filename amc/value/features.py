"""Frozen-encoder features of rendered states, embedded once and cached on disk.

Head-only training (``mode: head``) never changes the backbone, so the pooled vector the head
reads -- :meth:`amc.value.model.ValueModel.pool` of a rendered state -- is a pure function of
(encoder weights, tokenizer, ``max_length``, pooling, text). That vector is computed once and
stored; a rerun, a second model size or a grown dataset embeds only the states it has not seen.

Layout: ``<root>/<encoder key>/`` holds ``meta.json`` (what the key stands for) and shards
``shard-<digest>.npz``, each with ``keys`` (uint8, (n, 16): the first 16 bytes of the SHA-256 of
each text) and ``features`` (float32, (n, hidden)). The encoder key hashes the backbone's config
and every weight tensor, the tokenizer's vocabulary and truncation side, ``max_length``, the
pooling and the encoder's quantisation (``model.quantize``; int8 also records the quantised
kernel engine), so changing any of them starts a separate cache: int8 and float features are
never mixed. A shard is written to a temporary
file and renamed into place (atomic on POSIX), so an interrupted run leaves complete shards
only; it loses at most the one shard in progress. The index is the set of shards on disk.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from pydantic import Field

from amc.config import Frozen
from amc.value.model import ValueModel, encode, pad_batch
from amc.value.ranking import ObjectiveConfig
from amc.value.temperature import TemperatureConfig

KEY_BYTES = 16


class HeadConfig(Frozen):
    """Settings of head-only training on cached frozen-encoder features (``mode: head``)."""

    lr: float = Field(1e-3, gt=0)
    """Peak AdamW learning rate of the head (features are fixed, so larger than full mode)."""
    epochs: int = Field(60, ge=1)
    """Maximum epochs over the cached features (each is milliseconds to seconds on a CPU)."""
    batch_size: int = Field(256, ge=1)
    """Head-training batch size."""
    patience: int = Field(8, ge=0)
    """Stop after this many epochs without a validation-Pearson gain of min_delta."""
    embed_batch_size: int = Field(64, ge=1)
    """States per encoder forward pass while embedding."""
    shard_size: int = Field(2048, ge=1)
    """States per cache shard (an interruption loses at most one shard of work)."""
    cache_dir: Path = Path(".cache/value-embeddings")
    """Root of the on-disk feature cache (relative paths: from the working directory)."""
    objective: ObjectiveConfig = ObjectiveConfig()
    """Training objective: regression (default) or regression plus a within-(task, step)
    ranking / advantage term over whole-group batches (:mod:`amc.value.ranking`)."""
    temperature: TemperatureConfig = TemperatureConfig()
    """Fit the resampling temperature on validation after training and store it with the model
    (:mod:`amc.value.temperature`)."""


def text_key(text: str) -> bytes:
    """The cache key of one rendered state (first 16 bytes of its SHA-256)."""
    return hashlib.sha256(text.encode("utf-8")).digest()[:KEY_BYTES]


def _weights_digest(module: torch.nn.Module) -> str:
    """SHA-256 over the names, dtypes, shapes and bytes of every tensor of ``module``."""
    h = hashlib.sha256()
    for name, t in sorted(module.state_dict().items()):
        t = t.detach().cpu().contiguous()
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}".encode())
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


def encoder_identity(model: ValueModel, tokenizer: Any) -> dict[str, Any]:
    """Everything the pooled features depend on besides the text (JSON-ready)."""
    vocab = json.dumps(sorted(tokenizer.get_vocab().items()), ensure_ascii=False)
    return {
        "backbone": model.config.backbone,
        "backbone_config": model.hf_config.to_dict(),
        "weights_sha256": _weights_digest(model.backbone),
        "tokenizer_sha256": hashlib.sha256(vocab.encode()).hexdigest(),
        "truncation_side": tokenizer.truncation_side,
        "max_length": model.config.max_length,
        "pooling": model.config.pooling,
        # int8 features differ from float ones (and between int8 kernels): never mix them.
        # Float identities omit the keys, so existing float caches keep their directory.
        **({"quantize": model.config.quantize,
            "quantized_engine": torch.backends.quantized.engine}
           if model.config.quantize != "none" else {}),
    }


def encoder_key(identity: dict[str, Any]) -> str:
    """A short directory name for an encoder identity."""
    blob = json.dumps(identity, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:20]


def _atomic_write(path: Path, write: Any) -> None:
    """Write through a temporary sibling, fsync, rename: readers see all or nothing."""
    tmp = path.with_name(f".tmp-{os.getpid()}-{path.name}")
    with open(tmp, "wb") as fh:
        write(fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


class FeatureCache:
    """The shards of one encoder key: lookup by text key, append new shards."""

    def __init__(self, root: str | Path, identity: dict[str, Any]) -> None:
        self.dir = Path(root) / encoder_key(identity)
        self.dir.mkdir(parents=True, exist_ok=True)
        meta = self.dir / "meta.json"
        if not meta.is_file():
            text = json.dumps(identity, indent=2, sort_keys=True, default=str).encode()
            _atomic_write(meta, lambda fh: fh.write(text))
        self._rows: dict[bytes, np.ndarray] = {}
        for shard in sorted(self.dir.glob("shard-*.npz")):
            with np.load(shard) as z:
                keys, feats = z["keys"], z["features"]
            for k, f in zip(keys, feats, strict=True):
                self._rows[k.tobytes()] = f

    def __len__(self) -> int:
        return len(self._rows)

    def get(self, key: bytes) -> np.ndarray | None:
        """The cached feature vector of a text key, or None."""
        return self._rows.get(key)

    def put(self, keys: list[bytes], features: np.ndarray) -> Path:
        """Store a shard of ``(len(keys), hidden)`` float32 features; returns its path."""
        if len(keys) != len(features):
            raise ValueError(f"{len(keys)} keys for {len(features)} feature rows")
        karr = np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(len(keys), KEY_BYTES)
        feats = np.ascontiguousarray(features, dtype=np.float32)
        # Content-addressed name: two writers of the same states write the same file.
        path = self.dir / f"shard-{hashlib.sha256(karr.tobytes()).hexdigest()[:16]}.npz"
        _atomic_write(path, lambda fh: np.savez(fh, keys=karr, features=feats))
        for k, f in zip(keys, feats, strict=True):
            self._rows[k] = f
        return path


@dataclass
class EmbedStats:
    """What one :func:`embed_texts` call did."""

    states: int = 0
    unique: int = 0
    cache_hits: int = 0
    embedded: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    """User + system CPU time of the whole process (all threads) during the call: the work,
    apart from waiting for cores on a shared machine."""

    @property
    def states_per_s(self) -> float:
        """Requested states per second of wall time (cache hits included)."""
        return self.states / self.seconds if self.seconds else 0.0


def _embed_batches(model: ValueModel, tokenizer: Any, texts: list[str], batch_size: int,
                   progress: bool, desc: str) -> Any:
    """Yield (positions, features) per length-sorted batch of ``texts``."""
    from tqdm.auto import tqdm

    if not texts:
        return
    ids = encode(tokenizer, texts, model.config.max_length)
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    dev = next(model.parameters()).device
    bar = tqdm(total=len(ids), desc=desc, unit="state", disable=not progress, leave=False)
    with torch.inference_mode():
        for b in range(0, len(order), batch_size):
            pos = order[b: b + batch_size]
            x, m = pad_batch([ids[i] for i in pos], tokenizer.pad_token_id)
            feats = model.pool(x.to(dev), m.to(dev)).float().cpu().numpy()
            bar.update(len(pos))
            yield pos, feats
    bar.close()


def embed_texts(model: ValueModel, tokenizer: Any, texts: list[str], cache: FeatureCache,
                batch_size: int = 64, shard_size: int = 2048, progress: bool = True,
                desc: str = "embed") -> tuple[np.ndarray, EmbedStats]:
    """Pooled features, shape (len(texts), hidden), from the cache or the frozen encoder.

    Texts are de-duplicated; the missing ones are embedded in length-sorted batches under
    ``torch.inference_mode`` and flushed to the cache every ``shard_size`` states.
    """
    t0, c0 = time.perf_counter(), time.process_time()
    keys = [text_key(t) for t in texts]
    stats = EmbedStats(states=len(texts))
    first: dict[bytes, int] = {}
    for i, k in enumerate(keys):
        first.setdefault(k, i)
    stats.unique = len(first)
    missing = [i for k, i in first.items() if cache.get(k) is None]
    stats.cache_hits, stats.embedded = stats.unique - len(missing), len(missing)
    was_training = model.training
    model.eval()
    pend_k: list[bytes] = []
    pend_f: list[np.ndarray] = []
    for pos, feats in _embed_batches(model, tokenizer, [texts[i] for i in missing], batch_size,
                                     progress, desc):
        pend_k += [keys[missing[p]] for p in pos]
        pend_f.append(feats)
        if len(pend_k) >= shard_size:
            cache.put(pend_k, np.concatenate(pend_f))
            pend_k, pend_f = [], []
    if pend_k:
        cache.put(pend_k, np.concatenate(pend_f))
    model.train(was_training)
    hidden = int(model.hf_config.hidden_size)
    rows = [cache.get(k) for k in keys]
    if any(r is None for r in rows):
        raise RuntimeError("feature cache lost states it just stored")  # a broken shard write
    out = np.stack(rows) if rows else np.zeros((0, hidden), np.float32)  # type: ignore[arg-type]
    stats.seconds = time.perf_counter() - t0
    stats.cpu_seconds = time.process_time() - c0
    return out.astype(np.float32, copy=False), stats
