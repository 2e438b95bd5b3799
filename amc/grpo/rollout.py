"""Multi-turn GRPO rollouts through the project's environments, keeping sampled token ids.

A group is G episodes of one task. At each turn every live episode's history is rendered with
:func:`~amc.priors.prompts.completion_prompt` -- the transcript the ``hf`` prior renders in
completion mode, with the environment's valid actions as a numbered menu -- and the G prompts
are decoded in one left-padded batch. A turn ends at the first newline (or ``max_new_tokens``);
the text is parsed by :func:`~amc.priors.parsing.parse_action` exactly as the prior parses it.
The prompt and completion *token ids* are kept, so the loss scores what was sampled rather than
a re-tokenisation of its text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from amc.priors.decode import decode_batch, newline_tokens
from amc.priors.parsing import parse_action
from amc.priors.prompts import completion_prompt
from amc.protocols import EnvSuite
from amc.types import History, Step


@dataclass
class Turn:
    """One agent turn: what the model saw and what it wrote (token ids)."""

    prompt_ids: list[int]
    completion_ids: list[int]


@dataclass
class Rollout:
    """One episode: its turns, total environment reward and whether it ended."""

    task_id: str
    turns: list[Turn] = field(default_factory=list)
    reward: float = 0.0
    done: bool = False

    @property
    def generated_tokens(self) -> int:
        return sum(len(t.completion_ids) for t in self.turns)

    @property
    def prompt_tokens(self) -> int:
        return sum(len(t.prompt_ids) for t in self.turns)


class Policy:
    """A causal LM (with its LoRA adapter) and tokenizer, sampling batches of turns."""

    def __init__(self, model: Any, tokenizer: Any, device: torch.device) -> None:
        self.model, self.tokenizer, self.device = model, tokenizer, device
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        # Token ids whose text holds a newline end a turn (the hf prior's rule and loop).
        self.newline = newline_tokens(tokenizer, device)

    def encode(self, prompt: str) -> list[int]:
        return list(self.tokenizer(prompt)["input_ids"])

    @torch.no_grad()
    def sample(self, prompts: list[list[int]], max_new_tokens: int, temperature: float,
               gen: torch.Generator) -> list[list[int]]:
        """Completion token ids per prompt (stop token included), one batched KV-cache decode."""
        pad = self.tokenizer.pad_token_id
        width = max(len(p) for p in prompts)
        ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts], device=self.device)
        attn = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts],
                            device=self.device)

        def draw(logits: torch.Tensor, _rows: torch.Tensor) -> torch.Tensor:
            probs = torch.softmax(logits / temperature, -1)  # (B, V): every row, every step
            return torch.multinomial(probs, 1, generator=gen)[:, 0]

        out, lengths = decode_batch(self.model, ids, attn, max_new_tokens, draw,
                                    eos_id=self.tokenizer.eos_token_id, pad_id=pad,
                                    newline=self.newline)
        return [out[i, : int(n)].tolist() for i, n in enumerate(lengths)]

    def decode(self, ids: list[int]) -> str:
        text = str(self.tokenizer.decode(ids, skip_special_tokens=True))
        return text.split("\n", 1)[0]


def rollout_group(policy: Policy, suite: EnvSuite, task_id: str, g: int, opts: Any,
                  rng: np.random.Generator) -> list[Rollout]:
    """G episodes of ``task_id``, advanced turn by turn in one batch. ``opts``: GRPOOptions."""
    envs = [suite.make() for _ in range(g)]
    try:
        obs0 = [e.reset(task_id) for e in envs]
        hists = [History(task_id, o) for o in obs0]
        rolls = [Rollout(task_id) for _ in range(g)]
        for _ in range(opts.max_turns):
            live = [i for i in range(g) if not rolls[i].done]
            if not live:
                break
            menus = {i: envs[i].valid_actions() for i in live}
            prompts = [policy.encode(completion_prompt(
                hists[i].with_valid_actions(menus[i]), suite.name, opts.prompt,
                max_steps=opts.max_history_steps, menu_limit=opts.menu_limit)) for i in live]
            gen = torch.Generator(device=policy.device).manual_seed(
                int(rng.integers(0, 2**31 - 1)))
            outs = policy.sample(prompts, opts.max_new_tokens, opts.temperature, gen)
            for i, p, c in zip(live, prompts, outs, strict=True):
                text = policy.decode(c)
                action = parse_action(text, suite.name, menus[i], prefilled=True)
                st = envs[i].step(action)
                hists[i] = hists[i].extend(Step(text, action, st.observation, st.reward,
                                                st.done, info=dict(st.info)))
                rolls[i].turns.append(Turn(p, c))
                rolls[i].reward += float(st.reward)
                rolls[i].done = bool(st.done)
        return rolls
    finally:
        for e in envs:
            e.close()
