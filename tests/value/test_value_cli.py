"""`amc dataset` and `amc train` end to end (tiny settings), plus their one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from amc.cli import app

runner = CliRunner()


@pytest.mark.slow
def test_dataset_then_train_then_registered(tmp_path: Path, make_histories, records_writer) -> None:
    traj = records_writer(make_histories(n_tasks=8, rollouts=2), tmp_path / "results.jsonl")
    ds = tmp_path / "ds"
    r = runner.invoke(app, ["dataset", str(traj), "--out", str(ds), "--env", "textcraft",
                            "--history-k", "2", "-S", "val_fraction=0.25",
                            "-S", "render.preamble=Value?", "-S", "model_max_length=64"])
    assert r.exit_code == 0, r.output
    assert "train:" in r.output and (ds / "card.json").is_file()
    card = json.loads((ds / "card.json").read_text())
    assert card["options"]["render"]["env"] == "textcraft"
    assert card["options"]["render"]["preamble"] == "Value?"
    db = tmp_path / "mlruns" / "mlflow.db"
    r = runner.invoke(app, [
        "train", str(ds), "--env", "textcraft", "--out", str(tmp_path / "model"), "--epochs", "1",
        "--device", "cpu", "--tracking-uri", f"sqlite:///{db}",
        "-S", "model.num_layers=1", "-S", "model.max_length=64", "-S", "max_train_rows=16"])
    assert r.exit_code == 0, r.output
    assert "models:/amc-value-textcraft@challenger" in r.output
    assert (tmp_path / "model" / "model" / "value_config.json").is_file()
    assert (tmp_path / "mlruns" / "artifacts").is_dir()  # artifacts next to the database


def test_cli_errors_are_one_line(tmp_path: Path) -> None:
    r = runner.invoke(app, ["dataset", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path)])
    assert r.exit_code == 2 and "trajectory file not found" in r.output
    r = runner.invoke(app, ["dataset", str(tmp_path), "-S", "gamma=2"])
    assert r.exit_code == 2 and "gamma" in r.output
    r = runner.invoke(app, ["train", str(tmp_path), "--no-track"])
    assert r.exit_code == 2 and "not a value dataset directory" in r.output
