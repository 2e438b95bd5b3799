"""Model pieces: the three losses, value transform, pooling, layer truncation, padding."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from amc.value.model import ModelConfig, ValueModel, is_decoder, pad_batch


def _loss(cfg: ModelConfig, raw: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return ValueModel.loss(SimpleNamespace(config=cfg), raw, y)  # the loss uses only the config


def test_losses() -> None:
    raw, y = torch.tensor([0.5, -1.0, 2.0]), torch.tensor([1.0, 0.0, 1.0])
    assert _loss(ModelConfig(), raw, y).item() == pytest.approx((0.25 + 1 + 1) / 3)
    bce = torch.nn.functional.binary_cross_entropy_with_logits(raw, y)
    assert _loss(ModelConfig(loss="bce"), raw, y).item() == pytest.approx(bce.item())
    w = torch.exp(2.0 * y)
    expected = (w * (raw - y) ** 2).sum() / w.sum()
    got = _loss(ModelConfig(loss="exp_mse", exp_lambda=2.0), raw, y)
    assert got.item() == pytest.approx(expected.item())
    # lambda = 0 is plain MSE
    assert _loss(ModelConfig(loss="exp_mse", exp_lambda=0.0), raw, y).item() == pytest.approx(
        _loss(ModelConfig(), raw, y).item())
    to_value = ValueModel.to_value
    assert to_value(SimpleNamespace(config=ModelConfig(loss="bce")), torch.tensor([0.0])).item() \
        == 0.5
    assert to_value(SimpleNamespace(config=ModelConfig()), torch.tensor([3.0])).item() == 3.0


def test_dynamic_padding_and_decoder_detection() -> None:
    ids, mask = pad_batch([[1, 2, 3], [4]], pad_id=0)
    assert ids.tolist() == [[1, 2, 3], [4, 0, 0]] and mask.tolist() == [[1, 1, 1], [1, 0, 0]]
    assert is_decoder(SimpleNamespace(architectures=["Qwen2ForCausalLM"]))
    assert not is_decoder(SimpleNamespace(architectures=["BertModel"]))


def test_pooling_and_truncation_on_a_tiny_decoder(tiny_decoder) -> None:
    from transformers import AutoConfig, AutoModel

    hf = AutoConfig.from_pretrained(tiny_decoder)
    g = torch.Generator().manual_seed(0)
    cfg = ModelConfig(backbone=str(tiny_decoder), pooling="last", num_layers=1, lora=False)
    model = ValueModel(cfg, AutoModel.from_pretrained(tiny_decoder), hf, g).eval()
    assert model.hf_config.num_hidden_layers == 1 and len(model.backbone.layers) == 1
    ids, mask = pad_batch([[5, 6, 7], [5, 6, 7, 8, 9]], 0)
    with torch.inference_mode():
        both = model(ids, mask)
        alone = model(*pad_batch([[5, 6, 7]], 0))
    # Right padding + last-token pooling: the padded row equals the row scored alone.
    assert both[0].item() == pytest.approx(alone[0].item(), abs=1e-5)
    with pytest.raises(ValueError, match="LoRA targets"):
        ValueModel(ModelConfig(lora=True, lora_targets=("nope",)),
                   AutoModel.from_pretrained(tiny_decoder), hf)
