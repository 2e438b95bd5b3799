"""Adding a benchmark is one folder: the toy counter game (``tests/toybench``) is registered
there alone and then runs through ``amc run``, the planner-mix prior, the LLM priors' prompts
and parser, the value model's rendering and training, and the pipeline's prompt hash."""

from __future__ import annotations

import numpy as np
from typer.testing import CliRunner

import tests.toybench as toy
from amc.cli import app
from amc.pipeline.rounds import prompt_hash
from amc.priors.parsing import parse_action
from amc.priors.prompts import completion_prompt
from amc.results import read_jsonl
from amc.types import History, Step
from amc.value.data import DatasetOptions, build_dataset
from amc.value.model import ModelConfig
from amc.value.render import RenderOptions, render, render_env_for
from amc.value.scorers import default_reward_range
from amc.value.serve_io import reward_range_for
from amc.value.train import TrainConfig, train

runner = CliRunner()
RUN = ["run", "--env", toy.NAME, "--steps", "5", "--max-tasks", "4", "-n", "4", "--quiet",
       "-m", "react,bon@4,smc@4", "--resample-steps", "1,2"]


def _histories(seed: int = 0, rollouts: int = 3) -> list[History]:
    """Random up/down rollouts of the train tasks (3 steps at most)."""
    rng, suite, out = np.random.default_rng(seed), toy.CounterSuite(), []
    for task in suite.task_ids("train"):
        for _ in range(rollouts):
            env = suite.make()
            obs0, steps = env.reset(task), []
            for _ in range(3):
                a = ("up", "down")[int(rng.integers(2))]
                r = env.step(a)
                steps.append(Step(f"Action: {a}", a, r.observation, r.reward, r.done))
                if r.done:
                    break
            out.append(History(task, obs0, tuple(steps)))
    return out


def test_the_record_gives_prompts_parser_ranges_and_prompt_hash():
    h = History("1", toy.CounterEnv().reset("1"), ())
    assert completion_prompt(h, toy.NAME).startswith(toy.PROMPTS.instruction)
    assert parse_action("Thought: more.\nAction: UP!", toy.NAME) == "up"
    assert parse_action("Action: UP!", "synthetic") == "UP!"  # the generic parser differs
    assert prompt_hash(toy.NAME) != prompt_hash("synthetic")
    assert default_reward_range(toy.NAME) == reward_range_for({"env": toy.NAME}) == (0.0, 2.0)
    text = render(_histories()[0], RenderOptions(env=render_env_for(toy.NAME)))
    assert "=== INSTRUCTION ===\nreach 2." in text and "Quest:" not in text


def test_amc_run_with_the_planner_mix_prior_follows_the_records_planner(tmp_path):
    r = runner.invoke(app, [*RUN, "--prior", "planner-mix", "-S", "prior.options.q=1.0",
                            "--value", "none", "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    for m in ("react", "bon@4", "smc@4"):
        recs = list(read_jsonl(tmp_path / f"{m}__seed0.jsonl"))
        assert sorted(x["task_id"] for x in recs) == ["0", "1", "2", "3"]
        trajs = [t for x in recs for t in x["trajectories"]]
        assert all(t["total_reward"] == 1.0 for t in trajs)  # q = 1: the planner's "up" only
        assert {s["action"] for t in trajs for s in t["steps"]} == {"up"}


def test_a_value_model_trains_on_it_and_guides_amc_run(tmp_path):
    opts = DatasetOptions(render=RenderOptions(env=render_env_for(toy.NAME), history_k=2),
                          val_fraction=0.25, seed=0, model_max_length=48)
    build_dataset(_histories(), tmp_path / "ds", opts)
    cfg = TrainConfig(model=ModelConfig(max_length=48, num_layers=1, freeze_embeddings=True),
                      epochs=1, batch_size=16, device="cpu", env=toy.NAME, track=False,
                      register_model=False)
    res = train(tmp_path / "ds", cfg, tmp_path / "model")
    assert len(res.history) == 1 and np.isfinite(res.history[0]["train_loss"])
    r = runner.invoke(app, [*RUN, "--prior", "random-valid", "--value", str(res.model_dir),
                            "-m", "smc@4", "--out", str(tmp_path / "run")])
    assert r.exit_code == 0, r.output
    recs = list(read_jsonl(tmp_path / "run" / "smc@4__seed0.jsonl"))
    assert len(recs) == 4
    assert all(v is not None for x in recs for v in x["steps"][0]["values"])  # the model scored
