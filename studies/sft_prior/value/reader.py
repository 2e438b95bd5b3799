"""The fine-tuned LLM reads the state itself: hidden-state features and yes/no values.

The value options of :mod:`studies.value_options` read a state through a frozen MiniLM-L6 (a
22M-parameter sentence encoder that never saw TextCraft) and a linear head: every learned head
ranked the embedded prior's siblings at chance. The fine-tuned prior (Gemma-3-270M + the SFT
LoRA adapter, merged) was trained on exactly these states -- its compact prompt is the state,
and its next token is the planner's action -- so its own representation of the state is the
natural candidate that "reads the state better". Two ways to read it, both here:

- **hidden-state head** (:func:`hidden_features`): one forward pass of the prior's own prompt
  (the compact transcript plus the menu of valid actions, exactly what the prior sees before
  it acts, :func:`prompts`), ``output_hidden_states``; per declared layer the last token's
  vector (the position that predicts the action) and the mask-weighted mean over the prompt's
  tokens. A small logistic head on them is :mod:`studies.sft_prior.value.head`;
- **yes/no values** (:func:`yesno_values`): P(Yes) / (P(Yes) + P(No)) of the next token after
  a question, read by amc's :func:`~amc.value.yesno.answer_probability`. ``render="value"`` is
  amc's zero-shot yes/no prompt as a run builds it (:meth:`amc.value.yesno.YesNoValue.prompt`:
  the value renderer, then the question) put to the fine-tuned model; ``render="compact"``
  asks the same question after the prior's compact transcript (menu and trailing ``Action:``
  dropped), the layout the adapter was trained on. The next-token log-probabilities are
  :meth:`amc.priors.hf.HFPrior.top_next_tokens`'s, batched and computed at the last position
  only (:func:`next_token_tops`).

Hidden states are read with padding on the right, so a row's features do not depend on its
batch (causal attention: padding comes after every real token); the yes/no batches pad on
the left with positions counted from each row's first token. Identical prompts run once. torch is
seeded and its thread count set by :class:`ReaderConfig`. The menu of a recorded state is
rebuilt by replaying its actions (:class:`amc.envs.replay.ReplayCache`; the records do not
keep it).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field

from amc.config import Frozen
from amc.types import History

REPO = Path(__file__).resolve().parents[3]
QUESTION = "Will the agent complete the task?"
"""The yes/no question (amc's zero-shot-yesno default)."""


class ReaderConfig(Frozen):
    """How the fine-tuned LLM is loaded and run to read states."""

    adapter: str
    """The kept SFT adapter folder (``sft/kept/textcraft/step-NNNNNN``); its ``policy.json``
    gives the prior's prompt options (the compact prompt)."""
    depth: int = Field(2, ge=1)
    """TextCraft depth of the states' tasks (the menu replay builds this suite)."""
    threads: int = Field(2, ge=1)
    """torch intra-op threads."""
    batch_size: int = Field(8, ge=1)
    """Prompts per forward pass of the hidden-state features."""
    seed: int = 0
    """torch seed (nothing here samples; set for the record)."""
    layers: tuple[int, ...] = (9, 18)
    """``hidden_states`` indices read (0: embeddings; Gemma-3-270M has 18 layers: 9 is the
    middle, 18 the last, after the final norm)."""
    max_tokens: int = Field(2048, ge=16)
    """Longest prompt kept (its end: the current state and menu); the compact prompt of a
    depth-3 state at 14 steps is well under it."""


def set_torch(cfg: ReaderConfig) -> None:
    """torch's thread count and seed from the config."""
    import torch

    torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)


def load_prior(cfg: ReaderConfig) -> Any:
    """The ``hf`` prior with the adapter merged, on the CPU, with its kept prompt options."""
    os.environ.setdefault("AMC_CACHE", str(REPO / ".cache"))
    from amc.priors.hf import HFOptions, HFPrior

    set_torch(cfg)
    path = Path(cfg.adapter)
    path = path if path.is_absolute() else REPO / path
    opts = json.loads((path / "policy.json").read_text())["prior_options"]
    return HFPrior(HFOptions(**opts, adapter=str(path), device="cpu", kv_reuse=False),
                   env="textcraft")


def suite_for(depth: int) -> Any:
    """The TextCraft suite of the regime's tasks (binary reward, 10 distractors)."""
    from amc.envs.textcraft.env import TextCraftOptions, TextCraftSuite

    return TextCraftSuite(TextCraftOptions(min_depth=depth, max_depth=depth, n_distractors=10,
                                           reward="binary"))


def with_menus(histories: Sequence[History], suite: Any) -> list[History]:
    """Each history with the valid actions of its state (replayed from its actions)."""
    from amc.envs.replay import ReplayCache

    cache = ReplayCache(suite)
    return [h.with_valid_actions(cache.state(h.task_id, h.actions, h.observation0)
                                 .valid_actions()) for h in histories]


def prompts(prior: Any, histories: Sequence[History], suite: Any) -> list[str]:
    """The prior's own prompt of each state: the compact transcript, the menu, ``Action:``."""
    return [prior.render(h) for h in with_menus(histories, suite)]


def padded_batches(ids: list[list[int]], order: list[int], batch_size: int, pad: int,
                   left: bool) -> Iterator[tuple[list[int], Any, Any]]:
    """(rows, input ids, attention mask) per batch of ``order``; padded on the left (each row's
    last token at the end: next-token logits) or on the right (hidden states from position 0)."""
    import torch

    for b in range(0, len(order), batch_size):
        rows = order[b: b + batch_size]
        width = max(len(ids[i]) for i in rows)
        x = torch.full((len(rows), width), pad, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for j, i in enumerate(rows):
            at = slice(width - len(ids[i]), None) if left else slice(0, len(ids[i]))
            x[j, at] = torch.tensor(ids[i])
            mask[j, at] = 1
        yield rows, x, mask


def hidden_features(model: Any, tokenizer: Any, texts: Sequence[str], layers: Sequence[int],
                    batch_size: int = 8, max_tokens: int = 2048
                    ) -> dict[str, np.ndarray]:
    """Per layer L: ``last<L>`` (the last token's hidden state) and ``mean<L>`` (the mean over
    the prompt's tokens), each (len(texts), hidden) float32, rows in the order of ``texts``.

    Distinct texts run once, longest first in batches of ``batch_size``, right-padded."""
    import torch

    if not texts:
        raise ValueError("hidden_features needs at least one text")
    distinct = list(dict.fromkeys(texts))
    ids = [[int(t) for t in tokenizer(x)["input_ids"]][-max_tokens:] for x in distinct]
    order = sorted(range(len(distinct)), key=lambda i: (-len(ids[i]), i))
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    out: dict[str, np.ndarray] = {}
    model.eval()
    with torch.inference_mode():
        for rows, x, mask in padded_batches(ids, order, batch_size, pad, left=False):
            hs = model(input_ids=x, attention_mask=mask, output_hidden_states=True,
                       logits_to_keep=1).hidden_states  # no logits over 262k tokens per position
            last = mask.sum(1) - 1
            m = mask.unsqueeze(-1).float()
            for layer in layers:
                h = hs[layer].float()
                feats = {f"last{layer}": h[torch.arange(len(rows)), last],
                         f"mean{layer}": (h * m).sum(1) / m.sum(1)}
                for name, v in feats.items():
                    if name not in out:
                        out[name] = np.zeros((len(distinct), v.shape[-1]), np.float32)
                    out[name][rows] = v.numpy()
    where = {x: i for i, x in enumerate(distinct)}
    back = np.array([where[x] for x in texts])
    return {k: v[back] for k, v in out.items()}


def next_token_tops(model: Any, tokenizer: Any, texts: Sequence[str], top: int = 20,
                    batch_size: int = 8, max_tokens: int = 2048) -> list[dict[str, float]]:
    """The ``top`` most likely next tokens after each text with their log-probabilities (texts
    that decode alike share one entry): what :meth:`amc.priors.hf.HFPrior.top_next_tokens`
    returns, batched (left-padded, positions counted from each row's first token) and with the
    vocabulary's logits computed at the last position only (that method computes them at every
    position: for a 450-token prompt and Gemma's 262k-token vocabulary, more than the rest of
    the forward pass). Distinct texts run once."""
    import torch

    distinct = list(dict.fromkeys(texts))
    ids = [[int(t) for t in tokenizer(x)["input_ids"]][-max_tokens:] for x in distinct]
    order = sorted(range(len(distinct)), key=lambda i: (-len(ids[i]), i))
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    tops: list[dict[str, float]] = [{} for _ in distinct]
    model.eval()
    with torch.inference_mode():
        for rows, x, mask in padded_batches(ids, order, batch_size, pad, left=True):
            pos = (mask.cumsum(-1) - 1).clamp(min=0)
            logits = model(input_ids=x, attention_mask=mask, position_ids=pos,
                           logits_to_keep=1).logits[:, -1].float()
            values, tok_ids = torch.topk(torch.log_softmax(logits, -1), top)
            for j, i in enumerate(rows):
                out = tops[i]
                for lp, t in zip(values[j].tolist(), tok_ids[j].tolist(), strict=True):
                    text = str(tokenizer.decode([t]))
                    out[text] = float(np.logaddexp(out[text], lp)) if text in out else float(lp)
    where = {x: i for i, x in enumerate(distinct)}
    return [tops[where[x]] for x in texts]


def compact_question(prior: Any, history: History) -> str:
    """The compact transcript (no menu, no trailing ``Action:``), then the yes/no question."""
    text = prior.render(history.with_valid_actions(None))
    text = text.removesuffix("\nAction:").removesuffix("Action:")
    return f"{text}\n\nQuestion: {QUESTION} Answer Yes or No.\nAnswer:"


def yesno_values(prior: Any, histories: Sequence[History], render: str = "value",
                 batch_size: int = 8) -> tuple[np.ndarray, dict[str, int]]:
    """P(Yes) / (P(Yes) + P(No)) of each state from the fine-tuned model's next token, and the
    counts of states, distinct prompts and undecided ones (neither answer among the top 20
    tokens: the middle, 0.5). ``render="value"``: amc's zero-shot yes/no prompt
    (:meth:`amc.value.yesno.YesNoValue.prompt`, the value renderer); ``"compact"``:
    :func:`compact_question`. Both read the answer with amc's
    :func:`~amc.value.yesno.answer_probability`; reward range (0, 1): the value is p."""
    from amc.value.yesno import YesNoValue, YesNoValueOptions, answer_probability

    if render == "value":
        asker = YesNoValue(prior, "textcraft", YesNoValueOptions(question=QUESTION))
        texts = [asker.prompt(h) for h in histories]
    elif render == "compact":
        texts = [compact_question(prior, h) for h in histories]
    else:
        raise ValueError(f"render must be 'value' or 'compact', got {render!r}")
    tops = next_token_tops(prior.model, prior.tokenizer, texts, 20, batch_size)
    ps = [answer_probability(t) for t in tops]
    return (np.array([0.5 if p is None else p for p in ps], float),
            {"states": len(texts), "prompts": len(set(texts)),
             "undecided": sum(p is None for p in ps)})
