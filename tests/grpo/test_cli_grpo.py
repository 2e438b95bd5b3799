"""`amc grpo` end to end on the toy model: MLflow run, registry, and the policy back through
the same driver as every prior (`amc run --prior hf` with the registered adapter)."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from amc.cli import app

pytestmark = pytest.mark.slow  # torch/transformers/peft/mlflow imports: minutes on 2 cores
runner = CliRunner()


def test_grpo_registers_a_policy_that_amc_run_evaluates(toy_model: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import mlflow

    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    out = tmp_path / "policy"
    r = runner.invoke(app, ["grpo", "--out", str(out), "--steps", "2", "-S", f"model={toy_model}",
                            "-S", "max_tasks=1", "-S", "group_size=4", "-S", "max_turns=2",
                            "-S", "max_new_tokens=1", "-S", "lora_r=2", "-S", "lr=0.05"])
    assert r.exit_code == 0, r.output
    assert "registered amc-policy-textcraft version 1" in r.output
    curve = [json.loads(x) for x in (out / "curve.jsonl").read_text().splitlines()]
    assert [c["step"] for c in curve] == [0, 1]
    costs = json.loads((out / "metrics.json").read_text())["costs"]
    assert costs["generated_tokens"] == sum(c["generated_tokens"] for c in curve) > 0
    assert costs["rollouts"] == 8 and costs["wall_s"] > 0 and costs["cpu_s"] > 0

    run_id = mlflow.MlflowClient().get_model_version("amc-policy-textcraft", "1").run_id
    hist = mlflow.MlflowClient().get_metric_history(run_id, "mean_reward")
    assert [m.step for m in hist] == [0, 1]
    assert [m.value for m in hist] == [c["mean_reward"] for c in curve]

    ev = tmp_path / "eval"
    r = runner.invoke(app, ["run", "--env", "textcraft", "--prior", "hf", "-m", "react,bon@2",
                            "--split", "test", "--max-tasks", "1", "--steps", "2", "--quiet",
                            "-S", "env.options.max_depth=1", "-S", "env.options.n_distractors=0",
                            "-S", f"prior.options.model={toy_model}",
                            "-S", "prior.options.adapter=models:/amc-policy-textcraft/1",
                            "-S", "prior.options.max_new_tokens=1", "--out", str(ev)])
    assert r.exit_code == 0, r.output
    rows = {m["method"]: m for m in json.loads((ev / "summary.json").read_text())["methods"]}
    assert set(rows) == {"react", "bon@2"}
    # one generated token per turn, a menu prompt per turn: tokens were spent and counted
    assert rows["react"]["tokens_per_task"] > 0
    assert rows["bon@2"]["tokens_per_task"] > rows["react"]["tokens_per_task"]
