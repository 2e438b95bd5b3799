"""The train stage reads the value options from params: head mode, the within-(task, step)
objective and the fitted temperature reach the TrainConfig; the defaults leave it unchanged."""

from __future__ import annotations

from pathlib import Path

from amc.pipeline.params import load_params
from amc.pipeline.train import config

ROOT = Path(__file__).resolve().parents[2]


def test_defaults_train_by_plain_regression_in_full_mode() -> None:
    cfg = config(load_params(ROOT / "params.yaml"))
    assert cfg.mode == "full"
    assert cfg.head.objective.kind == "regression" and not cfg.head.temperature.fit


def test_value_options_reach_the_training_config() -> None:
    p = load_params(ROOT / "params.yaml", ["train.mode=head", "train.objective.kind=pairwise",
                                           "train.objective.weight=2.0",
                                           "train.fit_temperature=true"])
    cfg = config(p)
    assert cfg.mode == "head"
    assert cfg.head.objective.kind == "pairwise" and cfg.head.objective.weight == 2.0
    assert cfg.head.temperature.fit
