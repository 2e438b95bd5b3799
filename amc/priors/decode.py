"""The one batched KV-cache decode loop of the local models (the ``hf`` prior and GRPO).

Prompts are left-padded into one batch; every step feeds only the last sampled token with the
cache, draws the next token of every row (``draw``: temperature, filters, generators are the
caller's), and stops a row at EOS or, in completion mode, at the first token whose text holds
a newline (:func:`newline_tokens`). Rows that stopped are padded (their tokens are not
counted); the loop ends when every row has stopped or after ``max_new_tokens``.
:func:`decode_loop` is that loop alone, for prompts already in a cache (the ``hf`` prior's KV
reuse, :mod:`amc.priors.kv_cache`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

Draw = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
"""``draw(logits, rows)``: the next token of each row, (A,), from its last-position logits
(A, V) float32; ``rows`` (A,) are the rows' indices in the batch (which generator is whose)."""


def newline_tokens(tokenizer: Any, device: torch.device) -> torch.Tensor:
    """A (V,) bool mask of the token ids whose text holds a newline: the literal character
    (sentencepiece), ``Ċ`` (byte-level BPE) or the byte token ``<0x0A>``."""
    vocab = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
    return torch.tensor([bool(t) and ("\n" in t or "Ċ" in t or t == "<0x0A>") for t in vocab],
                        device=device)


def decode_batch(model: Any, ids: torch.Tensor, attn: torch.Tensor, max_new_tokens: int,
                 draw: Draw, *, eos_id: int, pad_id: int,
                 newline: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    """``(tokens (B, max_new_tokens), lengths (B,))`` of one batched decode.

    ``ids``/``attn``: the left-padded prompts and their mask, (B, L). ``draw`` maps the last
    position's logits (B, V, float32) and the rows' indices to the next token of every row
    (:data:`Draw`). ``newline``: the mask of :func:`newline_tokens` to stop at a newline, or
    None. A row's tokens are ``tokens[i, :lengths[i]]``, its stop token included.
    """
    pos = (attn.cumsum(-1) - 1).clamp(min=0)
    res = model(input_ids=ids, attention_mask=attn, position_ids=pos,
                use_cache=True,  # transformers 5: the cache comes back as `cache`
                logits_to_keep=1)  # only the last position is sampled
    return decode_loop(model, res.logits[:, -1, :].float(), res.cache, attn, pos[:, -1:],
                       max_new_tokens, draw, eos_id=eos_id, pad_id=pad_id, newline=newline)


def decode_loop(model: Any, logits: torch.Tensor, cache: Any, attn: torch.Tensor,
                last_pos: torch.Tensor, max_new_tokens: int, draw: Draw, *, eos_id: int,
                pad_id: int, newline: torch.Tensor | None, drop_finished: bool = False,
                ) -> tuple[torch.Tensor, torch.Tensor]:
    """The sampling loop after the prompts are in ``cache`` (:func:`decode_batch`'s result).

    ``logits``: the prompts' last-position logits, (B, V) float32; ``attn``: the cache's
    padding mask, (B, T); ``last_pos``: each prompt's last position id, (B, 1).
    ``drop_finished``: rows that stopped leave the batch (their cache rows are dropped) and
    are not drawn for again: a step costs the rows still writing, not the batch. Needs a cache
    of ``DynamicLayer``s and a ``draw`` whose rows do not share a generator (each row's draws
    are then its own either way). Without it every row is drawn for at every step (a stopped
    row's token is replaced by ``pad_id``), as a draw from one shared generator needs.
    """
    b = logits.shape[0]
    device = logits.device
    out = torch.full((b, max_new_tokens), pad_id, dtype=torch.long, device=device)
    finished = torch.zeros(b, dtype=torch.bool, device=device)
    lengths = torch.zeros(b, dtype=torch.long, device=device)
    active = torch.arange(b, device=device)  # the rows `logits` and the cache hold, in order
    pos = last_pos
    for t in range(max_new_tokens):
        nxt = torch.full((b,), pad_id, dtype=torch.long, device=device)
        nxt[active] = draw(logits, active)
        nxt = torch.where(finished, torch.full_like(nxt, pad_id), nxt)
        out[:, t] = nxt
        lengths += (~finished).long()
        stop = nxt == eos_id
        if newline is not None:
            stop |= newline[nxt]
        finished |= stop
        if bool(finished.all()) or t == max_new_tokens - 1:
            break
        if drop_finished and bool(finished[active].any()):
            keep = (~finished[active]).nonzero()[:, 0]  # positions in the current batch
            for layer in cache.layers:
                layer.batch_select_indices(keep)
            attn, pos, active = attn[keep], pos[keep], active[keep]
        step_ids = nxt[active][:, None]
        attn = torch.cat([attn, torch.ones_like(step_ids)], dim=1)
        pos = pos + 1
        res = model(input_ids=step_ids, attention_mask=attn, position_ids=pos,
                    cache=cache, use_cache=True, logits_to_keep=1)
        cache, logits = res.cache, res.logits[:, -1, :].float()
    return out, lengths
