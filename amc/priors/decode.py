"""The one batched KV-cache decode loop of the local models (the ``hf`` prior and GRPO).

Prompts are left-padded into one batch; every step feeds only the last sampled token with the
cache, draws the next token of every row (``draw``: temperature, filters, generators are the
caller's), and stops a row at EOS or, in completion mode, at the first token whose text holds
a newline (:func:`newline_tokens`). Rows that stopped are padded (their tokens are not
counted); the loop ends when every row has stopped or after ``max_new_tokens``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


def newline_tokens(tokenizer: Any, device: torch.device) -> torch.Tensor:
    """A (V,) bool mask of the token ids whose text holds a newline: the literal character
    (sentencepiece), ``Ċ`` (byte-level BPE) or the byte token ``<0x0A>``."""
    vocab = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
    return torch.tensor([bool(t) and ("\n" in t or "Ċ" in t or t == "<0x0A>") for t in vocab],
                        device=device)


def decode_batch(model: Any, ids: torch.Tensor, attn: torch.Tensor, max_new_tokens: int,
                 draw: Callable[[torch.Tensor], torch.Tensor], *, eos_id: int, pad_id: int,
                 newline: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    """``(tokens (B, max_new_tokens), lengths (B,))`` of one batched decode.

    ``ids``/``attn``: the left-padded prompts and their mask, (B, L). ``draw`` maps the last
    position's logits (B, V, float32) to the next token of every row (B,). ``newline``: the
    mask of :func:`newline_tokens` to stop at a newline, or None. A row's tokens are
    ``tokens[i, :lengths[i]]``, its stop token included.
    """
    b = ids.shape[0]
    out = torch.full((b, max_new_tokens), pad_id, device=ids.device)
    finished = torch.zeros(b, dtype=torch.bool, device=ids.device)
    lengths = torch.zeros(b, dtype=torch.long, device=ids.device)
    pos = (attn.cumsum(-1) - 1).clamp(min=0)
    past, step_ids = None, ids
    for t in range(max_new_tokens):
        res = model(input_ids=step_ids, attention_mask=attn, position_ids=pos,
                    cache=past, use_cache=True,  # transformers 5: `cache`
                    logits_to_keep=1)  # only the last position is sampled
        past = res.cache
        nxt = draw(res.logits[:, -1, :].float())
        nxt = torch.where(finished, torch.full_like(nxt, pad_id), nxt)
        out[:, t] = nxt
        lengths += (~finished).long()
        stop = nxt == eos_id
        if newline is not None:
            stop |= newline[nxt]
        finished |= stop
        if bool(finished.all()):
            break
        step_ids = nxt[:, None]
        attn = torch.cat([attn, torch.ones_like(step_ids)], dim=1)
        pos = pos[:, -1:] + 1
    return out, lengths
