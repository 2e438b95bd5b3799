"""The states of the value-options study: rounds' rollouts to train on, a held-out set to score.

- **train / validation**: every state (T + 1 prefixes, the last included, as the pipeline's
  dataset builds them)
  of the embedded-LLM rounds' prior rollouts (``evidence/llm-regime/rounds/trajectories/
  round-000r/bon@15__seed*.jsonl.gz``: 24 train tasks x 15 rollouts x 4 rounds), split by task
  with the dataset stage's seeded rule (``amc.value.data.split_tasks``, 20% validation);
- **held-out**: every prefix (0 .. T-1 steps) of the declared 60-task set's kept Best-of-4
  prior rollouts (``evidence/llm-regime/testset60/eval/bon@4__seed*``), which no round trains
  on -- the states ``heldout-values.json`` scores the rounds' values on.

Each state carries its (task, step) group, (task, seed, step) run group, target (reward still
to come), reward so far and success. Rendering is the value renderer's; two variants:
``old`` (no token budget: the model's left truncation at 128 tokens may cut the goal, as the
rounds trained), ``goal-kept`` (fitted to the model's input: the oldest history goes first) and
``goal+summary`` (goal-kept plus the benchmark's observed-state summary line in NOW, where the
renderer has one: issue 49's ``show_summary``).
Features: the frozen MiniLM-L6's pooled vectors through the project's on-disk cache.
"""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from amc.smc.records import TaskResult
from amc.types import History

ROOT = Path(__file__).resolve().parents[2]
ROUNDS = ROOT / "evidence/llm-regime/rounds/trajectories"
HELD_OUT = ROOT / "evidence/llm-regime/testset60/eval"
MAX_LENGTH = 128
"""The rounds' value input length (configs/llm-regime/rounds.yaml train.max_length)."""


@dataclass
class Split:
    """States of one split; every array has one entry per state."""

    text: list[str]
    target: np.ndarray
    reward_so_far: np.ndarray
    success: np.ndarray
    groups: list[tuple[str, int]]
    """(task, step): the siblings one resampling step compares (pooled over seeds)."""
    runs: list[tuple[str, int, int]]
    """(task, seed, step): the particles of one run at one step."""
    x: np.ndarray | None = None
    """Frozen-encoder features (n, hidden), once embedded."""

    def features(self) -> np.ndarray:
        """The embedded features (error before :func:`embed`)."""
        if self.x is None:
            raise ValueError("split not embedded yet (states.embed)")
        return self.x

    def cols(self) -> dict[str, Any]:
        """The training columns of :mod:`amc.value.train_head`."""
        return {"text": self.text, "target": self.target.tolist(),
                "reward_so_far": self.reward_so_far.tolist(), "success": self.success.tolist(),
                "task_id": [g[0] for g in self.groups], "step": [g[1] for g in self.groups]}


def load_results(folder: Path, spec: str) -> list[TaskResult]:
    """The ``<spec>__seed<k>.jsonl.gz`` records of ``folder`` (sorted by (task, seed))."""
    name = re.compile(re.escape(spec) + r"__seed\d+\.jsonl\.gz")
    out = []
    for f in sorted(folder.glob(f"{spec}__seed*")):
        if name.fullmatch(f.name):
            for line in gzip.decompress(f.read_bytes()).decode().splitlines():
                if line.strip():
                    out.append(TaskResult.from_dict(json.loads(line)))
    if not out:
        raise FileNotFoundError(f"{folder}: no {spec}__seed<k>.jsonl.gz")
    return sorted(out, key=lambda r: (str(r.task_id), int(r.seed)))


def _states(results: list[TaskResult], render: Any, with_last: bool) -> Split:
    text, tgt, so_far, won, groups, runs = [], [], [], [], [], []
    for r in results:
        for tr in r.trajectories:
            h = History(r.task_id, r.observation0, tr.steps, budget=r.budget)
            rewards = [float(s.reward) for s in tr.steps]
            for k in range(len(rewards) + (1 if with_last else 0)):
                text.append(render(h.prefix(k)))
                so_far.append(sum(rewards[:k]))
                tgt.append(sum(rewards[k:]))
                won.append(sum(rewards) >= 1.0)
                groups.append((str(r.task_id), k))
                runs.append((str(r.task_id), int(r.seed), k))
    return Split(text, np.array(tgt), np.array(so_far), np.array(won, bool), groups, runs)


def _select(s: Split, tasks: set[str]) -> Split:
    idx = [i for i, g in enumerate(s.groups) if g[0] in tasks]
    return Split([s.text[i] for i in idx], s.target[idx], s.reward_so_far[idx], s.success[idx],
                 [s.groups[i] for i in idx], [s.runs[i] for i in idx])


def build(variant: str, tokenizer: Any) -> dict[str, Split]:
    """train / validation / held-out states rendered by ``variant`` (``old``, ``goal-kept``,
    ``goal+summary``)."""
    from amc.value.data import DatasetOptions, split_tasks

    render = renderer(variant, tokenizer)
    rounds = [r for d in sorted(ROUNDS.glob("round-*")) for r in load_results(d, "bon@15")]
    everything = _states(rounds, render, with_last=True)
    split = split_tasks([g[0] for g in everything.groups], DatasetOptions(seed=0))
    return {"train": _select(everything, set(split["train"])),
            "validation": _select(everything, set(split["validation"])),
            "held_out": _states(load_results(HELD_OUT, "bon@4"), render, with_last=False)}


def renderer(variant: str, tokenizer: Any) -> Any:
    """The value renderer of ``variant`` (``old``, ``goal-kept``, ``goal+summary``)."""
    from amc.value.render import Renderer, RenderOptions

    opts: dict[str, Any] = {"env": "textcraft", "history_k": 20}
    if "show_summary" in RenderOptions.model_fields:
        opts["show_summary"] = variant == "goal+summary"
    elif variant == "goal+summary":
        raise ValueError("this renderer has no observed-state summary (show_summary)")
    if variant in ("goal-kept", "goal+summary"):
        opts["max_tokens"] = MAX_LENGTH - 2  # MiniLM adds [CLS] and [SEP]
    elif variant != "old":
        raise ValueError(f"unknown rendering variant {variant!r}")
    return Renderer(RenderOptions(**opts), None if variant == "old" else tokenizer)


def embed(splits: dict[str, Split], cache_dir: Path, progress: bool = False) -> dict[str, float]:
    """Fill each split's ``x`` with frozen MiniLM features (cached); embedding statistics."""
    from amc.value.features import FeatureCache, embed_texts, encoder_identity

    model, tok = encoder()
    cache = FeatureCache(cache_dir, encoder_identity(model, tok))
    stats = {"states": 0.0, "embedded": 0.0, "seconds": 0.0, "cpu_seconds": 0.0}
    for name, s in splits.items():
        s.x, st = embed_texts(model, tok, s.text, cache, 64, 2048, progress, desc=name)
        for k in stats:
            stats[k] += float(getattr(st, k))
    return stats


def encoder() -> tuple[Any, Any]:
    """The frozen MiniLM-L6 value model (seed 0) at 128 tokens and its tokenizer."""
    from amc.value.model import load_tokenizer_for
    from amc.value.train_head import frozen_model
    from amc.value.train_run import TrainConfig

    cfg = TrainConfig(mode="head", track=False,
                      model={"max_length": MAX_LENGTH, "num_layers": 6})
    return frozen_model(cfg), load_tokenizer_for(cfg.model)
