"""The optional GRPO stage (grpo/dvc.yaml, amc.grpo.stage): off by default, fair when on.

Fast tests check the disabled path and that both evaluations share every setting that makes
the comparison fair; the slow one runs ``dvc --cd grpo repro`` (grpo/ is its own DVC project) at toy
size in a temp git repository (real DVC, real MLflow sqlite store) and checks that the root
``dvc repro`` and ``dvc status`` never include the stage.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from amc.grpo import stage as grpo
from tests.pipeline.conftest import copy_stage_inputs

ROOT = Path(__file__).resolve().parents[2]


def toy_section(model: Path, tracking: str) -> dict:
    """A ``grpo`` section at toy size: one task, one round, two-step episodes."""
    return {"enabled": True, "max_tasks": 1, "seeds": [0], "n": 2, "max_steps": 2,
            "resample_steps": [1], "prior": {"max_new_tokens": 1},
            "train": {"model": str(model), "max_tasks": 1, "group_size": 2, "steps": 1,
                      "max_turns": 2, "max_new_tokens": 1, "lora_r": 2, "lr": 0.05,
                      "tracking_uri": tracking}}


def test_default_params_train_nothing(tmp_path: Path) -> None:
    sp = grpo.load_stage_params(ROOT / "params.yaml")
    assert sp.enabled is False  # the repository's default
    sp = sp.model_copy(update={"out_dir": tmp_path / "g", "metrics_file": tmp_path / "m.json"})
    assert grpo.run(sp) == {"enabled": False}
    assert json.loads((tmp_path / "m.json").read_text()) == {"enabled": False}
    assert "grpo.enabled is false" in (tmp_path / "g" / "comparison.md").read_text()
    assert not (tmp_path / "g" / grpo.POLICY).exists()


def test_both_sides_share_env_tasks_seeds_and_runtime() -> None:
    sp = grpo.GRPOStageParams(enabled=True, max_tasks=3, seeds=[0, 1], n=4,
                              train={"model": "some/model", "env_options": {"max_depth": 1}})
    frozen, policy = grpo.eval_config(sp, None), grpo.eval_config(sp, "/abs/adapter")
    for key in ("env", "split", "max_tasks", "seeds", "smc"):
        assert getattr(frozen, key) == getattr(policy, key), key
    assert frozen.env.options == {"max_depth": 1} and frozen.split == "test"
    assert frozen.prior.options["model"] == policy.prior.options["model"] == "some/model"
    assert "adapter" not in frozen.prior.options
    assert policy.prior.options["adapter"] == "/abs/adapter"
    assert frozen.methods == ("react", "bon@4", "smc@4") and policy.methods == ("react", "bon@4")
    assert frozen.out_dir != policy.out_dir


def test_bad_section_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text("grpo: {enabled: true, n: 1}\n")
    with pytest.raises(ValueError, match=r"grpo.*\bn\b"):
        grpo.load_stage_params(tmp_path / "p.yaml")
    (tmp_path / "p.yaml").write_text("grpo: {train: {steps: 0}}\n")
    with pytest.raises(ValueError, match="steps"):
        grpo.train_options(grpo.load_stage_params(tmp_path / "p.yaml"))
    (tmp_path / "p.yaml").write_text("grpo: {seeds: [1, 1]}\n")  # issue 64: both runs twice
    with pytest.raises(ValueError, match=r"^grpo\.seeds: 1 is given twice"):
        grpo.load_stage_params(tmp_path / "p.yaml")


@pytest.mark.slow
def test_dvc_repro_of_the_grpo_stage_at_toy_size(toy_model: Path, tmp_path: Path) -> None:
    root = tmp_path / "project"
    shutil.copytree(ROOT / "amc", root / "amc", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "grpo/.dvc").mkdir(parents=True)
    for f in ("dvc.yaml", "grpo/dvc.yaml", "grpo/.dvc/config", "grpo/.dvc/.gitignore",
              "grpo/.dvcignore"):  # grpo/ is its own DVC project (dvc init --subdir)
        shutil.copy(ROOT / f, root / f)
    copy_stage_inputs(root)  # the declared held-out task lists collect reads
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    (root / ".gitignore").write_text("mlruns/\n__pycache__/\n")
    env = {**os.environ, "PYTHONPATH": str(root),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}

    def sh(*args: str) -> str:
        p = subprocess.run(args, cwd=root, env=env, capture_output=True, text=True,
                           timeout=2400)
        assert p.returncode == 0, f"{args}: {p.stdout[-3000:]}\n{p.stderr[-3000:]}"
        return p.stdout + p.stderr

    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    for cmd in (["git", "init", "-q"], ["git", "config", "user.email", "t@amc.invalid"],
                ["git", "config", "user.name", "amc test"], ["dvc", "init", "-q"],
                ["dvc", "config", "core.analytics", "false"], ["git", "add", "-A"],
                ["git", "commit", "-qm", "project"]):
        sh(*cmd)
    # what `dvc repro` would run (its stages fail here without data: errors ignored)
    default = sh("dvc", "repro", "--dry", "--ignore-errors")
    # (the quoted stage name and "grpo:": the temporary path holds this test's name)
    assert "'collect'" in default and "'grpo'" not in default
    assert "grpo:" not in sh("dvc", "status")  # the root project never sees grpo/
    assert "'grpo'" in sh("dvc", "--cd", "grpo", "repro", "--dry")
    sh("dvc", "--cd", "grpo", "repro")  # default params: a note, no training
    assert json.loads((root / "grpo/metrics.json").read_text()) == {"enabled": False}
    assert not (root / "grpo/out/policy").exists()

    params["grpo"] = toy_section(toy_model, f"sqlite:///{root / 'mlruns.db'}")
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    sh("dvc", "--cd", "grpo", "repro")
    m = json.loads((root / "grpo/metrics.json").read_text())
    assert set(m["methods"]) == {"frozen/react", "frozen/bon@2", "frozen/smc@2",
                                 "grpo/react", "grpo/bon@2"}
    assert m["value"] == "none" and m["training"]["rollouts"] == 2
    assert all(r["tokens_per_task"] > 0 for r in m["methods"].values())
    table = (root / "grpo/out/comparison.md").read_text()
    assert "| GRPO | `bon@2` | 2 |" in table and "| frozen | `smc@2` | 2 |" in table
    status = sh("dvc", "--cd", "grpo", "status")
    assert "changed" not in status  # outputs recorded in grpo/dvc.lock
    assert "grpo:" not in sh("dvc", "status")

    import mlflow

    client = mlflow.MlflowClient(f"sqlite:///{root / 'mlruns.db'}")
    assert client.get_model_version("amc-policy-textcraft", "1").run_id
