"""Rollouts and log-probabilities on the toy model: what is sampled is what is scored."""

from pathlib import Path

import numpy as np
import pytest
import torch

from amc.grpo.config import GRPOOptions
from amc.grpo.rollout import rollout_group
from amc.grpo.trainer import load_policy, turn_logps
from amc.registry import ENVIRONMENTS, load_builtin_components

pytestmark = pytest.mark.slow  # minutes on two shared cores (torch, transformers, peft imports)

EASY = {"reward": "dense", "max_depth": 1, "n_distractors": 0}


def _opts(model: Path, **kw: object) -> GRPOOptions:
    base = dict(model=str(model), env_options=EASY, max_turns=3, max_new_tokens=2, lora_r=2,
                track=False)
    return GRPOOptions(**{**base, **kw})  # type: ignore[arg-type]


def test_batched_padded_scoring_equals_scoring_each_turn_alone(toy_model: Path) -> None:
    load_builtin_components()
    opts = _opts(toy_model)
    policy = load_policy(opts)
    suite = ENVIRONMENTS.build("textcraft", EASY)
    task = suite.task_ids("train")[0]
    rolls = rollout_group(policy, suite, task, 3, opts, np.random.default_rng(0))
    turns = [t for r in rolls for t in r.turns]
    assert len({len(t.prompt_ids) for t in turns}) > 1  # prompts of different lengths
    with torch.no_grad():
        logp, mask = turn_logps(policy, turns, opts.temperature)
        for i, t in enumerate(turns):
            ids = torch.tensor([t.prompt_ids + t.completion_ids])
            full = torch.log_softmax(policy.model(input_ids=ids).logits[0].float(), -1)
            n = len(t.completion_ids)
            want = full[len(t.prompt_ids) - 1: -1].gather(
                1, torch.tensor(t.completion_ids)[:, None])[:, 0]
            assert int(mask[i].sum()) == n
            torch.testing.assert_close(logp[i, :n], want, atol=1e-4, rtol=1e-4)


def test_rollouts_follow_the_environment_and_repeat_with_the_seed(toy_model: Path) -> None:
    load_builtin_components()
    opts = _opts(toy_model, max_new_tokens=1)
    policy = load_policy(opts)
    suite = ENVIRONMENTS.build("textcraft", EASY)
    task = suite.task_ids("train")[0]
    a = rollout_group(policy, suite, task, 4, opts, np.random.default_rng(7))
    b = rollout_group(policy, suite, task, 4, opts, np.random.default_rng(7))
    assert [[t.completion_ids for t in r.turns] for r in a] == \
        [[t.completion_ids for t in r.turns] for r in b]
    for r in a:
        assert 1 <= len(r.turns) <= opts.max_turns
        assert len(r.turns) == opts.max_turns or r.done  # stops early only when done
        assert all(len(t.completion_ids) == 1 for t in r.turns)
        assert 0.0 <= r.reward <= 1.0
    # the first prompt of every rollout is the same rendering of the task's start
    assert len({tuple(r.turns[0].prompt_ids) for r in a}) == 1
