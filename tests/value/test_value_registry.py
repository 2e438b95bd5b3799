"""Registry: load by alias in a fresh process gives identical predictions; strict loading."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from amc.registry import VALUES
from amc.types import History, Step
from amc.value.model import CONFIG_FILE, CheckpointMismatchError, load_model, predict_texts

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
TEXTS = ["Predict the future reward.\n\n=== NOW ===\n[STATE] You walk into a clear open road.",
         "Predict the future reward.\n\n=== NOW ===\n[STATE] You walk into a dark stormy swamp.",
         "The episode is over."]

FRESH = """
import json, sys
import mlflow, pandas as pd
from amc.value.scorers import LearnedValue
texts = json.loads(sys.argv[1])
v = LearnedValue.load("models:/amc-value-textcraft@challenger", device="cpu")
pf = mlflow.pyfunc.load_model("models:/amc-value-textcraft@challenger")
print(json.dumps({"learned": v.score_texts(texts),
                  "pyfunc": pf.predict(pd.DataFrame({"text": texts}))["raw"].tolist()}))
"""


def test_load_by_alias_in_fresh_process_gives_identical_predictions(trained, mlflow_uri) -> None:
    model, tok, _ = load_model(trained.model_dir)
    expected = predict_texts(model, tok, TEXTS)
    env = {**os.environ, "MLFLOW_TRACKING_URI": mlflow_uri, "PYTHONPATH": str(REPO),
           "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", FRESH, json.dumps(TEXTS)], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["learned"] == pytest.approx(expected, abs=1e-6)
    assert got["pyfunc"] == pytest.approx(expected, abs=1e-6)


async def test_value_registry_builds_learned_value(trained, mlflow_uri) -> None:
    value = VALUES.build("learned", {"model": "models:/amc-value-textcraft@challenger",
                                     "tracking_uri": mlflow_uri, "device": "cpu"},
                         env_name="textcraft", env_options=None, beta=1.0, prior=None)
    h = History("0", "Crafting commands:\ncraft item 0 using 2 planks\nGoal: craft item 0.",
                (Step("r", "go 0", "You walk into a bright sunny meadow.", 0.0, False),))
    (v,) = await value.score([h])
    model, tok, _ = load_model(trained.model_dir)
    assert v == pytest.approx(predict_texts(model, tok, [value.render(h)])[0], abs=1e-6)
    await value.aclose()
    with pytest.raises(ValueError, match="cannot load value model"):
        VALUES.build("learned", {"model": "models:/amc-value-nope@champion",
                                 "tracking_uri": mlflow_uri})


def test_mismatched_head_fails_loudly(trained, tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    shutil.copytree(trained.model_dir, bad)
    meta = json.loads((bad / CONFIG_FILE).read_text())
    meta["model"]["head_hidden"] = 8  # config says a 2-layer head; the weights hold a linear one
    (bad / CONFIG_FILE).write_text(json.dumps(meta))
    with pytest.raises(CheckpointMismatchError, match=r"missing: head\.2\.bias"):
        load_model(bad)
    with pytest.raises(FileNotFoundError, match="not a value model"):
        load_model(tmp_path)


@pytest.mark.parametrize("damage", ["no tokenizer", "truncated weights", "foreign weights"])
def test_a_damaged_model_folder_is_one_error_line_naming_value(trained, tmp_path: Path,
                                                               monkeypatch, damage) -> None:
    """Issue 64: a folder without tokenizer/ said "Repo id must be in the form ..."; a
    truncated safetensors file ended in a SafetensorError traceback."""
    from typer.testing import CliRunner

    from amc.cli import app

    bad = tmp_path / "bad"
    shutil.copytree(trained.model_dir, bad)
    weights = bad / "model.safetensors"
    if damage == "no tokenizer":
        shutil.rmtree(bad / "tokenizer")
    elif damage == "truncated weights":
        weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    else:
        weights.write_bytes(b"\x00" * 64)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AMC_CACHE", str(tmp_path / "cache"))
    r = CliRunner().invoke(app, ["run", "--env", "synthetic", "--value", str(bad), "-m", "smc",
                                 "-n", "2", "--steps", "2", "--resample-steps", "1",
                                 "--max-tasks", "1", "--quiet", "--out", str(tmp_path / "o")])
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert r.exit_code == 2 and len(lines) == 1, r.output
    why = "has no tokenizer/ folder" if damage == "no tokenizer" else \
        "model.safetensors: not a readable safetensors file"
    assert lines[0].startswith("error: --value: ") and why in lines[0], lines[0]
    assert "Repo id" not in lines[0] and not (tmp_path / "o").exists()
