"""Shared fixtures of the value tests: a learnable synthetic trajectory set, a small dataset,
one trained model logged into a temporary MLflow store (session-scoped: training is the cost)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from amc.types import History, Step
from amc.value.data import DatasetOptions, build_dataset
from amc.value.model import ModelConfig
from amc.value.render import RenderOptions
from amc.value.train import TrainConfig, train

SHORT_PREAMBLE = "Predict the future reward."
RENDER = RenderOptions(env="textcraft", history_k=2, max_tokens=56, preamble=SHORT_PREAMBLE)

_GOOD = ["a bright sunny meadow", "a clear open road", "a lit warm hall"]
_BAD = ["a dark stormy swamp", "a collapsed blocked tunnel", "a burning broken bridge"]


def learnable_histories(n_tasks: int = 32, rollouts: int = 2, seed: int = 0) -> list[History]:
    """Trajectories whose future reward is readable from the text.

    Each rollout walks 3 steps; the first observation says whether the path is good (success,
    reward 1 on the last step) or bad (reward 0). Targets: 1 before the end on good rollouts, 0 on
    bad ones, 0 at the terminal state -- a task a sentence encoder learns in one or two epochs.
    """
    rng = np.random.default_rng(seed)
    out = []
    for task in range(n_tasks):
        obs0 = f"Crafting commands:\ncraft item {task} using 2 planks\nGoal: craft item {task}."
        for _ in range(rollouts):
            good = bool(rng.random() < 0.5)
            scene = (_GOOD if good else _BAD)[int(rng.integers(3))]
            steps = []
            for t in range(3):
                last = t == 2
                obs = (f"You walk into {scene}." if t == 0 else
                       "The episode is over." if last else f"You are still in {scene}.")
                steps.append(Step(f"Action: go {t}", f"go {t}", obs,
                                  1.0 if (last and good) else 0.0, last))
            out.append(History(str(task), obs0, tuple(steps)))
    return out


def write_records(histories: list[History], path: Path) -> Path:
    """The driver's per-task JSON-lines layout: {task_id, observation0, trajectories: [...]}."""
    by_task: dict[str, list[History]] = {}
    for h in histories:
        by_task.setdefault(h.task_id, []).append(h)
    with open(path, "w") as fh:
        for tid, hs in by_task.items():
            rec = {"task_id": tid, "observation0": hs[0].observation0, "trajectories": [
                {"steps": [s.to_dict() for s in h.steps], "total_reward": h.total_reward}
                for h in hs]}
            fh.write(json.dumps(rec) + "\n")
    return path


# Two of MiniLM's six layers and frozen embeddings keep the CPU cost of the test small.
TRAIN_CFG = TrainConfig(
    model=ModelConfig(max_length=64, num_layers=2, freeze_embeddings=True), lr=3e-4, epochs=3,
    batch_size=16, patience=1, seed=7, device="cpu", env="textcraft", experiment="test-value")
MIN_VAL_PEARSON = 0.6  # the stated bar for the learnable synthetic set (observed ~0.79)


@pytest.fixture(scope="session")
def dataset_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ds")
    build_dataset(learnable_histories(), out,
                  DatasetOptions(render=RENDER, val_fraction=0.25, seed=0, include_terminal=True))
    return out


@pytest.fixture(scope="session")
def mlflow_uri(tmp_path_factory: pytest.TempPathFactory) -> str:
    from amc.tracking import sqlite_uri

    return sqlite_uri(tmp_path_factory.mktemp("mlruns") / "mlflow.db")


@pytest.fixture(scope="session")
def tiny_decoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Llama (decoder LM) with the MiniLM tokenizer, saved locally (offline)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from amc.value.model import ModelConfig, load_tokenizer_for

    tok = load_tokenizer_for(ModelConfig())
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
                      max_position_embeddings=256, pad_token_id=tok.pad_token_id)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = LlamaForCausalLM(cfg)
    out = tmp_path_factory.mktemp("tiny-llama")
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def trained(dataset_dir: Path, mlflow_uri: str, tmp_path_factory: pytest.TempPathFactory):
    cfg = TRAIN_CFG.model_copy(update={"tracking_uri": mlflow_uri})
    return train(dataset_dir, cfg, tmp_path_factory.mktemp("run"))


@pytest.fixture(scope="session")
def make_histories():
    """The :func:`learnable_histories` factory (fixtures avoid test-module imports)."""
    return learnable_histories


@pytest.fixture(scope="session")
def records_writer():
    """The :func:`write_records` helper."""
    return write_records


@pytest.fixture(scope="session")
def train_cfg() -> TrainConfig:
    """The small CPU training configuration the tests share."""
    return TRAIN_CFG


@pytest.fixture(scope="session")
def min_val_pearson() -> float:
    """The validation Pearson the learnable synthetic set must reach."""
    return MIN_VAL_PEARSON
