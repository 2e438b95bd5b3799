"""The SFT loss reads the action tokens only; batches respect the cap; a killed run resumes."""

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from amc.sft.config import DemoOptions, SFTOptions
from amc.sft.demos import Demo
from amc.sft.loop import CHECKPOINTS, FINAL, train
from amc.sft.trainer import Example, batches, collate, load_lora, loss_of, tokenize


def opts_for(model: Path, out: Path, **kw: object) -> SFTOptions:
    base = {"model": str(model), "lora_r": 2, "lora_alpha": 4, "lora_top_layers": 1,
            "batch_tokens": 64, "checkpoint_every": 2, "holdout_fraction": 0.25, "lr": 0.05,
            "warmup_steps": 0, "track": False, "out_dir": str(out), "demos": DemoOptions()}
    return SFTOptions(**{**base, **kw})


DEMOS = [Demo(str(t), 0, 0, f"Observation: {t * 7919} {t * 104729}\n1. get {t} x\nAction:",
              f" get {t * 31} x\n") for t in range(1, 9)]  # ~20 digit tokens each


def test_the_loss_is_the_nll_of_the_completion_tokens_only(toy_lm: Path, tmp_path: Path) -> None:
    model, tok, dev = load_lora(opts_for(toy_lm, tmp_path))
    ex = tokenize(tok, DEMOS[:3])
    assert all(0 < e.n_prompt < len(e.ids) for e in ex)
    ids, mask, _ = collate(ex, tok.pad_token_id, dev)
    with torch.no_grad():
        got = loss_of(model, ex, tok.pad_token_id, dev)
        logp = torch.log_softmax(model(input_ids=ids, attention_mask=mask).logits.float(), -1)
    want = [-logp[r, j - 1, e.ids[j]] for r, e in enumerate(ex)
            for j in range(e.n_prompt, len(e.ids))]  # position j - 1 predicts token j
    assert float(got) == pytest.approx(float(torch.stack(want).mean()), rel=1e-5)


def test_batches_cover_every_example_once_under_the_token_cap() -> None:
    ex = [Example(list(range(n)), 1) for n in [5, 30, 7, 64, 12, 12, 40, 3]]
    bs = batches(ex, 64, np.random.default_rng(1))
    assert sorted(i for b in bs for i in b) == list(range(len(ex)))
    assert all(max(len(ex[i].ids) for i in b) * len(b) <= 64 for b in bs)
    assert bs != batches(ex, 64, np.random.default_rng(2)) or len(bs) == 1


def test_a_killed_run_resumes_to_the_same_adapter(toy_lm: Path, tmp_path: Path) -> None:
    whole = train(opts_for(toy_lm, tmp_path / "a", epochs=2.0), DEMOS, "h", log=lambda _: None)
    steps = int(whole.curve[-1]["step"])
    assert steps >= 4 and [c["step"] for c in whole.checkpoints][:2] == [2, 4]

    class Killed(Exception):
        pass

    def kill_at_first_checkpoint(line: str) -> None:
        if line.startswith("sft step 2/"):
            raise Killed

    b = opts_for(toy_lm, tmp_path / "b", epochs=2.0)
    with pytest.raises(Killed):
        train(b, DEMOS, "h", log=kill_at_first_checkpoint)
    resumed = train(b, DEMOS, "h", log=lambda _: None)
    name = "adapter_model.safetensors"
    assert (tmp_path / "b" / FINAL / name).read_bytes() == \
        (tmp_path / "a" / FINAL / name).read_bytes()
    assert [c["loss"] for c in resumed.curve] == [c["loss"] for c in whole.curve]
    first = tmp_path / "a" / CHECKPOINTS / "step-000002"
    assert (first / name).read_bytes() != (tmp_path / "a" / FINAL / name).read_bytes()
    meta = json.loads((first / "policy.json").read_text())
    assert meta["prior_options"]["few_shot"] is False and "val_action_acc" in meta
    with pytest.raises(ValueError, match="another SFT run"):
        train(opts_for(toy_lm, tmp_path / "b", epochs=2.0, lr=0.01), DEMOS, "h")
