"""A head-mode value kept as its head and restored byte for byte; anything else refused."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch

from amc.value.model import FULL_WEIGHTS, ModelConfig, build_model, load_tokenizer_for
from studies.sweeps.keep_value import KEPT_HEAD, MANIFEST, file_hashes, keep, restore

CONFIG = ModelConfig(max_length=32, num_layers=2, head_hidden=8)


def saved_value(out: Path, seed: int, train_encoder: bool = False) -> Path:
    """A value directory as a sweep's value stage leaves it: the model in ``model/`` (the
    package's encoder, a trained -- here seeded random -- head), run records and a
    calibration file beside it; ``train_encoder`` changes one encoder weight too (a fully
    fine-tuned value)."""
    model = build_model(CONFIG, generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        for p in model.head.parameters():
            p.add_(torch.randn(p.shape, generator=torch.Generator().manual_seed(seed + 1)))
        if train_encoder:
            next(model.backbone.parameters()).view(-1)[0] += 1e-3
    model.save(out / "model", load_tokenizer_for(CONFIG), extra={"metrics": {"wall_s": 1.5}})
    (out / "metrics.json").write_text(json.dumps({"wall_s": 1.5}))
    (out / "calibration.json").write_text(json.dumps({"kind": "isotonic", "x": [0, 1]}))
    return out


@pytest.fixture(scope="module")
def value_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return saved_value(tmp_path_factory.mktemp("value") / "model", seed=3)


def test_a_kept_head_restores_the_directory_byte_for_byte(value_dir: Path, tmp_path: Path):
    kept = keep(value_dir, tmp_path / "kept")
    assert not (kept / "model" / FULL_WEIGHTS).exists()
    assert (kept / "model" / KEPT_HEAD).is_file()
    size = sum(p.stat().st_size for p in kept.rglob("*") if p.is_file())
    full = sum(p.stat().st_size for p in value_dir.rglob("*") if p.is_file())
    assert size < full / 10  # the encoder's tensors are not kept
    assert json.loads((kept / MANIFEST).read_text())["files"] == file_hashes(value_dir)
    restored = restore(kept, tmp_path / "restored")
    assert file_hashes(restored) == file_hashes(value_dir)
    with pytest.raises(FileExistsError):
        restore(kept, restored)


def test_a_changed_head_or_file_is_refused_and_nothing_is_written(value_dir: Path,
                                                                   tmp_path: Path):
    from safetensors.torch import load_file, save_file

    kept = keep(value_dir, tmp_path / "kept")
    head = load_file(str(kept / "model" / KEPT_HEAD))
    first = next(iter(head))
    head[first] = head[first] + 1e-6
    save_file(head, str(kept / "model" / KEPT_HEAD))
    with pytest.raises(ValueError, match=re.escape(FULL_WEIGHTS)):
        restore(kept, tmp_path / "out")
    assert not (tmp_path / "out").exists() and not (tmp_path / "out.tmp").exists()
    kept = keep(value_dir, tmp_path / "kept")  # replaced whole
    (kept / "calibration.json").write_text("{}")
    with pytest.raises(ValueError, match=re.escape("calibration.json")):
        restore(kept, tmp_path / "out")


def test_a_value_whose_encoder_was_trained_cannot_be_kept(tmp_path: Path):
    trained = saved_value(tmp_path / "full", seed=4, train_encoder=True)
    with pytest.raises(ValueError, match="cannot be kept as a head"):
        keep(trained, tmp_path / "kept")
    assert not (tmp_path / "kept").exists() and not (tmp_path / "kept.tmp").exists()
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="not a full-weights value"):
        keep(tmp_path / "empty", tmp_path / "kept")
