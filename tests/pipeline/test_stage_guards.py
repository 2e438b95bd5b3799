"""Stages refuse what would corrupt the pipeline's data: a config that cannot run (before any
output is touched) and data of one environment flowing into another's model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import mlflow
import pytest
import yaml
from typer.testing import CliRunner

from amc.cli.main import app
from amc.pipeline import dataset, evaluate, train
from amc.pipeline.params import load_params
from tests.pipeline.conftest import MODEL, TOY_PARAMS, register_version

ROOT = Path(__file__).resolve().parents[2]


def _persisted_rollouts() -> tuple[Path, bytes]:
    """A finished rollout file of an earlier configuration (what DVC persists between runs)."""
    f = Path("data/trajectories/bon@4__seed0.jsonl")
    f.parent.mkdir(parents=True)
    body = json.dumps({"task_id": "0", "config_hash": "an-earlier-config"}) + "\n"
    f.write_text(body)
    return f, body.encode()


def test_invalid_config_fails_before_stale_outputs_are_deleted(workdir: Path) -> None:
    bad = {**TOY_PARAMS, "env": {"name": "synthetic", "options": {"reward": "dense"}}}
    Path("params.yaml").write_text(yaml.safe_dump(bad))
    f, body = _persisted_rollouts()
    r = CliRunner().invoke(app, ["collect", "--quiet"])
    assert r.exit_code == 2 and "options for environment 'synthetic'" in r.output
    assert f.read_bytes() == body  # the old code deleted it, then failed
    proc = subprocess.run([sys.executable, "-m", "amc.pipeline.collect"], capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert proc.returncode == 2 and proc.stderr.startswith("error: env.options: bad options")
    assert f.read_bytes() == body


def test_dataset_refuses_rollouts_of_another_environment(workdir: Path) -> None:
    Path("data/trajectories").mkdir(parents=True)
    manifest = {"env": "textcraft", "prior": "synthetic", "complete": True, "files": [],
                "split": "train", "records": 0}
    Path("data/trajectories/manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match=r"holds env 'textcraft' rollouts.*env\.name='synthetic'"):
        dataset.run(load_params("params.yaml"))
    assert not Path("data/dataset").exists()


def test_train_refuses_a_dataset_of_another_environment(workdir: Path) -> None:
    Path("data/dataset").mkdir(parents=True)
    Path("data/dataset/source.json").write_text(json.dumps({"env": "textcraft"}))
    with pytest.raises(ValueError, match="built from 'textcraft' rollouts; refusing to train "
                                         "'amc-value-synthetic'"):
        train.run(load_params("params.yaml"))
    assert not Path("models/value").exists()


def test_evaluate_refuses_a_challenger_trained_on_another_environment(workdir: Path) -> None:
    v = register_version(workdir, 1.0)
    mlflow.MlflowClient().set_model_version_tag(MODEL, v, "amc.env", "textcraft")
    with pytest.raises(ValueError, match=f"{MODEL} v{v} was trained on 'textcraft' data"):
        evaluate.plan(load_params("params.yaml"))
    mlflow.MlflowClient().set_model_version_tag(MODEL, v, "amc.env", "synthetic")
    assert evaluate.plan(load_params("params.yaml"))["models"]["challenger"]["version"] == v
