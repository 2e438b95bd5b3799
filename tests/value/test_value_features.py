"""Feature cache of head mode: one embedding per state, rerun and growth hit the cache, any change
of encoder, max_length or pooling starts a new cache, an interrupted write leaves no corrupt
shard, and the cached features are exactly what the model's head reads."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from amc.value.features import (
    FeatureCache,
    embed_texts,
    encoder_identity,
    encoder_key,
    text_key,
)
from amc.value.model import ModelConfig, build_model, encode, load_tokenizer_for, pad_batch

# One MiniLM layer and short inputs: the cache logic, not the encoder, is under test.
SMALL = ModelConfig(max_length=32, num_layers=1)


def _texts(n: int, tag: str = "") -> list[str]:
    return [f"You walk into room {i}{tag}. Inventory: [stick] ({i % 7})" for i in range(n)]


@pytest.fixture(scope="module")
def encoder():
    cfg = SMALL
    model = build_model(cfg, torch.Generator().manual_seed(0)).eval()
    return model, load_tokenizer_for(cfg)


class Counter:
    """Counts the states that go through the backbone (a forward hook)."""

    def __init__(self, model) -> None:
        self.states = 0
        self.handle = model.backbone.register_forward_hook(self._hook)

    def _hook(self, module, args, kwargs_or_out, *rest) -> None:
        self.states += int(kwargs_or_out.last_hidden_state.shape[0])

    def close(self) -> None:
        self.handle.remove()


def test_rerun_and_growth_embed_only_new_states(encoder, tmp_path: Path) -> None:
    model, tok = encoder
    ident = encoder_identity(model, tok)
    texts = _texts(40) + _texts(10)  # 10 duplicates: embedded once
    count = Counter(model)
    try:
        first, st1 = embed_texts(model, tok, texts, FeatureCache(tmp_path, ident), batch_size=8,
                                 shard_size=16, progress=False)
        assert count.states == 40 and st1.embedded == 40 and st1.cache_hits == 0
        assert st1.unique == 40 and st1.states == 50 and st1.cpu_seconds > 0
        assert np.array_equal(first[40:], first[:10])
        # A fresh process-like reopen of the same directory: nothing re-embedded.
        again, st2 = embed_texts(model, tok, texts, FeatureCache(tmp_path, ident), batch_size=8,
                                 progress=False)
        assert count.states == 40 and st2.embedded == 0 and st2.cache_hits == 40
        assert np.array_equal(again, first)
        grown = texts + _texts(5, tag=" (new)")
        out, st3 = embed_texts(model, tok, grown, FeatureCache(tmp_path, ident), progress=False)
        assert count.states == 45 and st3.embedded == 5 and st3.cache_hits == 40
        assert np.array_equal(out[:50], first)
    finally:
        count.close()
    shards = list(Path(tmp_path, encoder_key(ident)).glob("shard-*.npz"))
    assert len(shards) == 4  # 16 + 16 + 8 of the first call, 5 of the grown one


def test_features_are_what_the_head_reads(encoder, tmp_path: Path) -> None:
    model, tok = encoder
    texts = _texts(12)
    feats, _ = embed_texts(model, tok, texts, FeatureCache(tmp_path, encoder_identity(model, tok)),
                           batch_size=5, progress=False)
    x, m = pad_batch(encode(tok, texts, SMALL.max_length), tok.pad_token_id)
    with torch.inference_mode():
        full = model(x, m).numpy()
        via_cache = model.head(torch.from_numpy(feats)).squeeze(-1).numpy()
    np.testing.assert_allclose(via_cache, full, atol=1e-5)
    assert text_key(texts[0]) != text_key(texts[1]) and len(text_key("")) == 16


def test_key_changes_with_max_length_pooling_and_weights(encoder) -> None:
    model, tok = encoder
    base = encoder_key(encoder_identity(model, tok))
    twin = build_model(SMALL, torch.Generator().manual_seed(1)).eval()  # other head, same encoder
    assert encoder_key(encoder_identity(twin, tok)) == base
    for change in ({"max_length": 48}, {"pooling": "last"}, {"num_layers": 2}):
        other = build_model(SMALL.model_copy(update=change), torch.Generator().manual_seed(0))
        assert encoder_key(encoder_identity(other, tok)) != base, change
    with torch.no_grad():
        twin.backbone.get_input_embeddings().weight[5, 0] += 1e-3  # a fine-tuned encoder
    assert encoder_key(encoder_identity(twin, tok)) != base


def test_changed_max_length_re_embeds(encoder, tmp_path: Path) -> None:
    model, tok = encoder
    texts = _texts(6)
    embed_texts(model, tok, texts, FeatureCache(tmp_path, encoder_identity(model, tok)),
                progress=False)
    longer = build_model(SMALL.model_copy(update={"max_length": 16}),
                         torch.Generator().manual_seed(0)).eval()
    count = Counter(longer)
    try:
        _, st = embed_texts(longer, tok, texts,
                            FeatureCache(tmp_path, encoder_identity(longer, tok)), progress=False)
    finally:
        count.close()
    assert st.cache_hits == 0 and count.states == 6
    assert len(list(tmp_path.iterdir())) == 2  # one directory per encoder key


def test_interrupted_shard_write_leaves_a_readable_cache(encoder, tmp_path: Path,
                                                         monkeypatch) -> None:
    model, tok = encoder
    ident = encoder_identity(model, tok)
    texts = _texts(20)
    real_savez = np.savez
    calls = {"n": 0}

    def crash_on_second(fh, **arrays):  # the disk write of shard 2 dies half-way
        calls["n"] += 1
        if calls["n"] == 2:
            fh.write(b"PK\x03\x04 half a zip file")
            raise OSError("simulated crash while writing a shard")
        real_savez(fh, **arrays)

    monkeypatch.setattr("amc.value.features.np.savez", crash_on_second)
    with pytest.raises(OSError, match="simulated crash"):
        embed_texts(model, tok, texts, FeatureCache(tmp_path, ident), batch_size=5,
                    shard_size=10, progress=False)
    monkeypatch.setattr("amc.value.features.np.savez", real_savez)
    reopened = FeatureCache(tmp_path, ident)
    assert len(reopened) == 10  # the complete first shard only
    _, st = embed_texts(model, tok, texts, reopened, progress=False)
    assert st.cache_hits == 10 and st.embedded == 10


# ------------------------------------------------------------ int8 encoder (head mode, CPU)

INT8 = SMALL.model_copy(update={"quantize": "int8-dynamic"})


@pytest.fixture(scope="module")
def int8_encoder():
    return build_model(INT8, torch.Generator().manual_seed(0)).eval()


def test_int8_and_float_features_never_mix(encoder, int8_encoder, tmp_path: Path) -> None:
    model, tok = encoder
    texts = _texts(16)
    f_ident, q_ident = encoder_identity(model, tok), encoder_identity(int8_encoder, tok)
    assert f_ident["weights_sha256"] == q_ident["weights_sha256"]  # same float weights...
    assert encoder_key(f_ident) != encoder_key(q_ident)  # ...yet separate caches
    assert "quantize" not in f_ident  # float caches written before the option keep their key
    floats, _ = embed_texts(model, tok, texts, FeatureCache(tmp_path, f_ident), progress=False)
    count = Counter(int8_encoder)  # the float backbone must not run for int8 features
    try:
        q, st = embed_texts(int8_encoder, tok, texts, FeatureCache(tmp_path, q_ident),
                            progress=False)
    finally:
        count.close()
    assert st.cache_hits == 0 and st.embedded == 16 and count.states == 0
    assert not np.allclose(q, floats, atol=1e-4)  # quantised arithmetic, not the float path
    cos = (q * floats).sum(1) / np.linalg.norm(q, axis=1) / np.linalg.norm(floats, axis=1)
    assert cos.min() > 0.5  # ...of the same encoder
    again, st2 = embed_texts(model, tok, texts, FeatureCache(tmp_path, f_ident), progress=False)
    assert st2.cache_hits == 16 and np.array_equal(again, floats)
    assert len(list(tmp_path.iterdir())) == 2


def test_int8_copy_replaces_every_linear_and_checkpoints_stay_float(encoder, int8_encoder,
                                                                     tmp_path: Path) -> None:
    from amc.value.model import load_model

    model, tok = encoder
    with torch.no_grad():
        enc = int8_encoder.encoder()
        assert enc is int8_encoder.encoder() and enc is not int8_encoder.backbone  # built once
    assert not any(type(m) is torch.nn.Linear for m in enc.modules())
    assert any(type(m) is torch.nn.Linear for m in int8_encoder.backbone.modules())
    state = int8_encoder.state_dict()
    assert all(t.dtype == torch.float32 for t in state.values())
    assert state.keys() == model.state_dict().keys()
    x, m = pad_batch(encode(tok, _texts(6), INT8.max_length), tok.pad_token_id)
    with torch.inference_mode():
        want = int8_encoder.pool(x, m)
    int8_encoder.save(tmp_path, tok)
    loaded, _, meta = load_model(tmp_path)
    assert meta["model"]["quantize"] == "int8-dynamic"
    with torch.inference_mode():
        assert torch.equal(loaded.pool(x, m), want)  # quantised again on load, identically
    with pytest.raises(ValueError, match="CPU only"):
        load_model(tmp_path, device="cuda")


def test_int8_copy_follows_new_weights(int8_encoder) -> None:
    twin = build_model(INT8, torch.Generator().manual_seed(0)).eval()
    x = torch.tensor([[101, 2000, 2001, 102]])
    m = torch.ones_like(x)
    with torch.inference_mode():
        before = twin.pool(x, m)
        state = {k: v.clone() for k, v in twin.state_dict().items()}
        key = next(k for k in state if k.endswith("attention.self.query.weight"))
        state[key] *= 3.0
        twin.load_state_dict(state)
        assert not torch.allclose(twin.pool(x, m), before)  # not the stale int8 copy


def test_int8_is_refused_where_it_cannot_work() -> None:
    from amc.value.train import TrainConfig

    with pytest.raises(ValueError, match="needs mode='head'"):
        TrainConfig(model=INT8)
    assert TrainConfig(model=INT8, mode="head").model.quantize == "int8-dynamic"
    trainable = build_model(INT8, torch.Generator().manual_seed(0))  # backbone not frozen
    x = torch.tensor([[101, 2000, 102]])
    with pytest.raises(RuntimeError, match="frozen"):
        trainable.pool(x, torch.ones_like(x))
    with pytest.raises(ValueError, match="not LoRA"):
        build_model(INT8.model_copy(update={"lora": True}))
