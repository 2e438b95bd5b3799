"""`amc sft` end to end on the toy model: demonstrations, MLflow run, a registered version that
the hf prior loads and that `amc grpo` starts from (the SFT policy becomes its KL reference)."""

import json
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from amc.cli import app

pytestmark = pytest.mark.slow  # torch/transformers/peft/mlflow imports: minutes on 2 cores
runner = CliRunner()


def logits(model: object, ids: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return model(input_ids=ids).logits  # type: ignore[operator]


def test_sft_registers_an_adapter_that_grpo_and_the_prior_build_on(
        toy_lm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import mlflow
    from transformers import AutoModelForCausalLM

    from amc.priors.adapter import merge_adapters

    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    out = tmp_path / "sft"
    r = runner.invoke(app, ["sft", "--out", str(out), "-S", f"model={toy_lm}",
                            "-S", "env_options.max_depth=1", "-S", "env_options.n_distractors=0",
                            "-S", "demos.max_tasks=4", "-S", "demos.skills=[1.0]",
                            "-S", "lora_r=2", "-S", "lora_top_layers=1", "-S", "lr=0.05",
                            "-S", "checkpoint_every=1", "-S", "holdout_fraction=0.25"])
    assert r.exit_code == 0, r.output
    assert "registered amc-policy-textcraft version 1" in r.output
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["pairs"] > 0 and len(metrics["checkpoints"]) == metrics["steps"] >= 1
    client = mlflow.MlflowClient()
    mv = client.get_model_version("amc-policy-textcraft", "1")
    run = client.get_run(mv.run_id)
    assert run.data.tags["data_sha256"] == metrics["data_sha256"]
    assert run.data.metrics["cost_wall_s"] > 0 and run.data.metrics["cost_cpu_s"] > 0
    assert len(client.get_metric_history(mv.run_id, "loss")) == metrics["steps"]

    r = runner.invoke(app, ["grpo", "--out", str(tmp_path / "grpo"), "--steps", "1",
                            "-S", f"model={toy_lm}", "-S", "max_tasks=1", "-S", "group_size=2",
                            "-S", "max_turns=1", "-S", "max_new_tokens=1", "-S", "lora_r=2",
                            "-S", "init_adapter=models:/amc-policy-textcraft/1"])
    assert r.exit_code == 0, r.output
    grpo = tmp_path / "grpo" / "adapter"
    assert json.loads((grpo / "policy.json").read_text())["init_adapter"] == \
        "models:/amc-policy-textcraft/1"
    ids = torch.tensor([[3, 5, 6, 7, 8]])
    base = AutoModelForCausalLM.from_pretrained(toy_lm)
    plain = logits(base, ids)
    sft = logits(merge_adapters(AutoModelForCausalLM.from_pretrained(toy_lm),
                                "models:/amc-policy-textcraft/1"), ids)
    chained = logits(merge_adapters(AutoModelForCausalLM.from_pretrained(toy_lm), str(grpo)),
                     ids)
    assert not torch.allclose(sft, plain, atol=1e-4)  # the SFT adapter moved the model
    # GRPO's own LoRA is small after one step: the chain is near the SFT policy, not the base
    assert (chained - sft).abs().max() < (chained - plain).abs().max()
