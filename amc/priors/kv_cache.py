"""Per-particle prefix/KV reuse for the ``hf`` prior: a step prefills only a particle's new tokens.

A particle's prompt at step t+1 repeats its prompt at step t up to the menu (instruction,
example, task, earlier steps), so the keys and values of that prefix are already known. The
:class:`PrefixCache` keeps, for the most recently used prompts, the KV of every layer and the
last position's logits, keyed by token ids. A new prompt takes the entry with the longest
common *token* prefix, reuses that many positions (a view of the entry: the entry itself is
never modified, so the children of a resampled particle all reuse their parent's prefix) and
prefills only the rest (:func:`prefill`). A prompt seen before costs no forward pass at all
(its logits are stored): the N identical prompts of step 0, or the copies a resampling makes.

Sliding-window layers (Gemma-3: 15 of 18 layers see only the last 512 positions). transformers'
sliding cache layer keeps only the last 511 positions, so it cannot be cropped back once it
passed the window: reusing the prefix of a 900-token entry would need positions it dropped.
Here every layer keeps its *full* history in a plain ``DynamicLayer`` and the window is applied
by the attention mask alone (``create_sliding_window_causal_mask`` in position = slot space),
so any prefix can be cut from any entry, below or past the window. Cost: a few more keys
attended in sliding layers and more memory per entry (36.9 KB per token in fp32 for
Gemma-3-270M: 18 layers x K and V x 1 head x 256; measured in the tests).

Batches. Each prompt is prefilled alone (batch 1, no padding: its logits do not depend on the
other prompts). The decoding that follows is batched: the rows' caches are copied into one
left-padded cache in which every row's tokens are contiguous and end at the same slot
(:func:`merge`). Then a slot distance is a position distance in every row, so the sliding
window of the mask covers the same tokens as for the row alone. (Padding *inside* a row,
between a cached prefix and its new tokens, breaks this: measured, it moved Gemma-3's logits
by up to 0.77.) What remains is floating-point noise of chunked versus whole prefill and of
batch shapes (about 1e-5 in the logits; measured in ``tests/priors/test_kv_cache.py``).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

KV = list[tuple[torch.Tensor, torch.Tensor]]
"""Per layer ``(keys, values)``, each (B, kv heads, positions, head dim)."""


@dataclass
class Entry:
    """A prompt's cached state: token ids, every layer's KV and the last position's logits."""

    ids: np.ndarray
    """(L,) int64 token ids the KV covers."""
    kv: KV
    """Per layer (1, kv heads, L, head dim): the full history, sliding layers included."""
    logits: torch.Tensor
    """(V,) float32 logits of the next token after ``ids``."""

    @property
    def nbytes(self) -> int:
        """Memory held by this entry (KV and logits), in bytes."""
        kv = sum(k.numel() * k.element_size() + v.numel() * v.element_size() for k, v in self.kv)
        return kv + self.logits.numel() * self.logits.element_size()


@dataclass
class ReuseStats:
    """How much prefilling the cache saved (prompt tokens, summed over prefills)."""

    prompts: int = 0
    """Prompts prefilled through the cache."""
    exact_hits: int = 0
    """Prompts found whole (no forward pass)."""
    reused_tokens: int = 0
    """Prompt tokens taken from an entry."""
    computed_tokens: int = 0
    """Prompt tokens run through the model."""


@dataclass
class PrefixCache:
    """Least-recently-used KV entries of recent prompts, bounded in entries and tokens."""

    max_entries: int = 32
    """Most entries kept (at least the particles of a step, N, to reuse every prefix)."""
    max_tokens: int = 32768
    """Most tokens kept over all entries (fp32 Gemma-3-270M: 36.9 KB each, 1.2 GB in all)."""
    entries: OrderedDict[tuple[int, ...], Entry] = field(default_factory=OrderedDict)
    stats: ReuseStats = field(default_factory=ReuseStats)

    @property
    def tokens(self) -> int:
        """Tokens held over all entries."""
        return sum(len(e.ids) for e in self.entries.values())

    def longest(self, ids: np.ndarray) -> tuple[Entry | None, int]:
        """The entry sharing the longest token prefix with ``ids`` and that prefix's length."""
        best, best_n = None, 0
        for e in self.entries.values():
            n = min(len(e.ids), len(ids))
            diff = np.flatnonzero(e.ids[:n] != ids[:n])  # first mismatching position, if any
            common = int(diff[0]) if len(diff) else n
            if common > best_n:
                best, best_n = e, common
        return best, best_n

    def put(self, entry: Entry) -> None:
        """Keep ``entry`` as the most recent one; evict the least recent beyond the caps."""
        key = tuple(entry.ids.tolist())
        self.entries[key] = entry
        self.entries.move_to_end(key)
        while len(self.entries) > 1 and (len(self.entries) > self.max_entries
                                         or self.tokens > self.max_tokens):
            self.entries.popitem(last=False)

    def touch(self, entry: Entry) -> None:
        """Mark ``entry`` as just used."""
        self.entries.move_to_end(tuple(entry.ids.tolist()))


def full_history_cache(kv: KV) -> Any:
    """A transformers ``DynamicCache`` holding ``kv`` as plain full-attention layers (no copy).

    Every layer, sliding or not, keeps all its positions; the model's sliding-window mask
    restricts what the sliding layers attend to."""
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    layers: list[Any] = []
    for k, v in kv:
        layer = DynamicLayer()
        layer.lazy_initialization(k, v)
        layer.keys, layer.values = k, v
        layers.append(layer)
    cache = DynamicCache()
    cache.layers = layers
    return cache


def prefill(model: Any, cache: PrefixCache, ids: list[int]) -> Entry:
    """The entry of prompt ``ids`` (a list of token ids, BOS included), computed on the longest
    cached prefix and stored in ``cache``. Runs the model on ``len(ids) - reused`` tokens."""
    arr = np.asarray(ids, dtype=np.int64)
    base, n = cache.longest(arr)
    cache.stats.prompts += 1
    if base is not None and n == len(arr) == len(base.ids):  # seen whole: nothing to compute
        cache.touch(base)
        cache.stats.exact_hits += 1
        cache.stats.reused_tokens += n
        return base
    n = min(n, len(arr) - 1)  # at least one token runs, to get the next token's logits
    device = model.device
    past = full_history_cache(
        [(k[:, :, :n], v[:, :, :n]) for k, v in base.kv] if base is not None and n > 0 else []
    )
    new = torch.as_tensor(arr[n:], device=device)[None]  # (1, L - n)
    pos = torch.arange(n, len(arr), device=device)[None]  # (1, L - n): positions go on
    res = model(input_ids=new, position_ids=pos, cache=past, use_cache=True, logits_to_keep=1)
    kv = [(layer.keys, layer.values) for layer in res.cache.layers]
    entry = Entry(arr, kv, res.logits[0, -1].float())
    cache.put(entry)
    cache.stats.reused_tokens += n
    cache.stats.computed_tokens += len(arr) - n
    return entry


def merge(entries: list[Entry]) -> tuple[Any, torch.Tensor, torch.Tensor]:
    """One left-padded batch cache of the rows' prompts (each row's tokens contiguous and
    ending at the last slot): ``(cache, attention mask (B, T) long, last position (B, 1))``."""
    lengths = [len(e.ids) for e in entries]
    b, t = len(entries), max(lengths)
    kv: KV = []
    for layer in range(len(entries[0].kv)):
        k0 = entries[0].kv[layer][0]  # (1, H, L, D)
        keys = k0.new_zeros((b, k0.shape[1], t, k0.shape[3]))  # (B, H, T, D)
        values = torch.zeros_like(keys)
        for i, e in enumerate(entries):
            keys[i, :, t - lengths[i]:] = e.kv[layer][0][0]
            values[i, :, t - lengths[i]:] = e.kv[layer][1][0]
        kv.append((keys, values))
    device = entries[0].logits.device
    attn = torch.zeros((b, t), dtype=torch.long, device=device)
    for i, n in enumerate(lengths):
        attn[i, t - n:] = 1
    last = torch.tensor(lengths, device=device)[:, None] - 1
    return full_history_cache(kv), attn, last
