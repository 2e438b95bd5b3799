"""The DAgger study: shards partition the declared tasks; the declared checkpoint rule."""

import json
from pathlib import Path

import pytest

from studies.sft_prior.dagger.collect import config, protocol, shard_tasks
from studies.sft_prior.dagger.search import chosen_step
from studies.sft_prior.dagger.search import config as search_config


def test_two_shards_play_every_declared_task_once_with_checkpoint_244() -> None:
    tasks = protocol()["collection"]["tasks"]
    a, b = config(0, 2), config(1, 2)
    assert sorted(a["task_ids"] + b["task_ids"], key=int) == tasks
    assert a["prior"]["options"]["adapter"] == "sft/kept/textcraft/step-000244"
    assert a["out_dir"] != b["out_dir"]
    with pytest.raises(ValueError, match="shard 2 of 2"):
        shard_tasks(tasks, 2, 2)


def write(folder: Path, step: int, own: float | None) -> None:
    d = folder / f"step-{step:06d}"
    d.mkdir(parents=True)
    meta = {"step": step, "val_action_acc": 0.5}
    if own is not None:
        meta["val_action_acc_own"] = own
    (d / "policy.json").write_text(json.dumps(meta))


def test_the_checkpoint_is_the_best_on_own_states_and_the_later_on_a_tie(tmp_path: Path) -> None:
    for step, own in [(25, 0.30), (50, 0.41), (75, 0.41), (100, 0.38)]:
        write(tmp_path, step, own)
    assert chosen_step(tmp_path) == (75, 0.41)
    write(tmp_path, 125, None)
    with pytest.raises(ValueError, match="no own-state accuracy"):
        chosen_step(tmp_path)
    with pytest.raises(FileNotFoundError, match="no checkpoints"):
        chosen_step(tmp_path / "none")


def test_the_search_cell_plays_only_declared_seeds() -> None:
    with pytest.raises(ValueError, match="seed 5 is not declared"):
        search_config(100, 2, 5)


def test_the_sampling_probabilities_are_the_priors_truncation_renormalised() -> None:
    import torch

    from amc.priors.hf import truncated
    from studies.sft_prior.dagger.sampling import TOP_K, TOP_P, truncated_probs

    logits = torch.randn(3, 500, generator=torch.Generator().manual_seed(0)) * 3
    probs, ids = truncated(logits / 0.5, TOP_K, TOP_P)  # what the prior draws from
    want = torch.zeros_like(logits).scatter(1, ids, probs)
    want = want / want.sum(-1, keepdim=True)
    assert torch.allclose(truncated_probs(logits, 0.5), want, atol=1e-6)
    assert int((want[0] > 0).sum()) < TOP_K  # top-p cut inside top-k: both truncations ran
