"""GRPO learns on an easy setting: TextCraft depth 1, no distractors (a menu of 2-3 actions).

The toy model starts near-uniform over its 14 tokens, so a few of its first answers name a
valid menu entry ("1": get the log, reward 0.5; then "2": craft, reward 0.5 more). GRPO must
amplify them: the reward of the training task rises, and on every batch with signal the
optimiser drives the batch's loss down.
"""

from pathlib import Path

import numpy as np
import pytest

from amc.grpo.config import GRPOOptions
from amc.grpo.trainer import train

pytestmark = pytest.mark.slow  # a few minutes on two shared cores


def test_reward_rises_and_the_loss_falls_on_an_easy_task(toy_model: Path,
                                                         tmp_path: Path) -> None:
    opts = GRPOOptions(model=str(toy_model), max_tasks=1, tasks_per_step=1, group_size=8,
                       steps=10, iterations=4, max_turns=2, max_new_tokens=1, lr=0.05,
                       beta=0.01, lora_r=4, track=False, out_dir=str(tmp_path))
    res = train(opts)
    reward = np.array([r["mean_reward"] for r in res.curve])
    assert reward[-4:].mean() > reward[:4].mean() + 0.15, reward
    signal = [r for r in res.curve if r["reward_std"] > 0]
    assert len(signal) >= len(res.curve) // 2
    assert all(r["loss_last"] < r["loss"] for r in signal), [(r["loss"], r["loss_last"])
                                                             for r in signal]
    assert res.adapter_dir is not None and (res.adapter_dir / "adapter_config.json").is_file()
    assert res.costs.generated_tokens == sum(r["generated_tokens"] for r in res.curve)
