"""The value model's content hash covers weights and configuration only: a retrain from the
same data and seed reproduces it although its run records (wall times) differ; a changed
weight, setting or seed changes it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from amc.value.digest import CONFIG_NAME, model_hash
from amc.value.features import HeadConfig
from amc.value.model import CONFIG_FILE
from amc.value.train import train
from studies.sweeps.cell import dir_hash


@pytest.fixture(scope="module")
def retrained(dataset_dir: Path, train_cfg, tmp_path_factory: pytest.TempPathFactory):
    """Two head-mode trainings of one config (the features embedded once, shared)."""
    head = HeadConfig(cache_dir=tmp_path_factory.mktemp("features"), shard_size=64)
    cfg = train_cfg.model_copy(update={"mode": "head", "head": head, "track": False})
    a = train(dataset_dir, cfg, tmp_path_factory.mktemp("a"))
    b = train(dataset_dir, cfg, tmp_path_factory.mktemp("b"))
    c = train(dataset_dir, cfg.model_copy(update={"seed": 8}), tmp_path_factory.mktemp("c"))
    return [r.model_dir.parent for r in (a, b, c)]


@pytest.mark.slow
def test_a_retrain_reproduces_the_hash_a_new_seed_does_not(retrained) -> None:
    a, b, c = retrained
    assert CONFIG_NAME == CONFIG_FILE
    assert (a / "metrics.json").is_file() and (a / "model" / CONFIG_FILE).is_file()
    assert model_hash(a) == model_hash(b) == dir_hash(b)  # what a sweep cell records
    assert model_hash(a) != model_hash(c)


@pytest.mark.slow
def test_run_records_do_not_count_weights_and_settings_do(retrained, tmp_path: Path) -> None:
    a = retrained[0]
    copy = tmp_path / "copy"
    shutil.copytree(a, copy)
    before = model_hash(copy)
    (copy / "metrics.json").write_text('{"wall_s": 12345}')  # a slower machine's record
    cfg = copy / "model" / CONFIG_FILE
    meta = json.loads(cfg.read_text())
    meta["metrics"] = {**meta.get("metrics", {}), "train_samples_per_s": 1.0}
    meta["backbone_config"]["_name_or_path"] = "/elsewhere/MiniLM"
    cfg.write_text(json.dumps(meta))
    assert model_hash(copy) == before
    meta["env"] = "other-env"
    cfg.write_text(json.dumps(meta))
    assert model_hash(copy) != before
    cfg.write_text(json.dumps({**meta, "env": json.loads((a / "model" / CONFIG_FILE)
                                                         .read_text())["env"]}))
    assert model_hash(copy) == before
    weights = next((copy / "model").glob("*.safetensors"))
    blob = bytearray(weights.read_bytes())
    blob[-1] ^= 1  # one bit of one tensor
    weights.write_bytes(bytes(blob))
    assert model_hash(copy) != before
    with pytest.raises(FileNotFoundError, match="no value model"):
        model_hash(tmp_path / "empty-folder-that-is-not-a-model")
