"""Demonstrations: train tasks only, never a held-out one, the planner's labels, the prompt."""

import json
from pathlib import Path

import numpy as np
import pytest

from amc.envs.textcraft.env import TextCraftOptions, TextCraftSuite
from amc.envs.textcraft.planner import menu_plan
from amc.priors.hf import HFOptions, HFPrior
from amc.priors.planner_mix import load_planner
from amc.sft.config import DemoOptions, SFTOptions
from amc.sft.demos import Demo, build_demos, check_no_leak, episode, read_demos, write_demos
from amc.types import History, Step

ENV = {"min_depth": 1, "max_depth": 2, "n_distractors": 2}


def options(tmp_path: Path, held: list[str], **demo: object) -> SFTOptions:
    f = tmp_path / "held.json"
    f.write_text(json.dumps({"tasks": {"validation": held}}))
    return SFTOptions(env_options=ENV, demos=DemoOptions(exclude_tasks_files=[str(f)], **demo))


def test_demonstrations_use_train_tasks_and_never_a_held_out_one(tmp_path: Path) -> None:
    suite = TextCraftSuite(TextCraftOptions(**ENV))
    train = suite.task_ids("train")
    held = train[1:4]
    opts = options(tmp_path, held, max_tasks=6, skills=[1.0])
    demos = build_demos(opts, suite)
    tasks = {d.task_id for d in demos}
    assert tasks == set([t for t in train if t not in held][:6])
    check_no_leak(demos, opts, suite)  # passes on its own output
    leak = Demo(held[0], 0, 0, "p", " a\n")
    with pytest.raises(ValueError, match=f"leak held-out.*{held[0]}"):
        check_no_leak([*demos, leak], opts, suite)
    test_task = Demo(suite.task_ids("test")[0], 0, 0, "p", " a\n")
    with pytest.raises(ValueError, match="non-train"):
        check_no_leak([*demos, test_task], opts, suite)


def test_labels_are_the_planners_and_noisy_episodes_reach_other_states(tmp_path: Path) -> None:
    suite = TextCraftSuite(TextCraftOptions(**ENV))
    opts = options(tmp_path, [], skills=[1.0, 0.0])
    hooks = load_planner("textcraft")
    tid = next(t for t in suite.task_ids("train") if len(menu_plan(suite, t)) >= 3)
    expert = list(episode(opts, suite, hooks, tid, 0, np.random.default_rng(0)))
    assert [d.completion for d in expert] == [f" {a}\n" for a in menu_plan(suite, tid)]
    noisy = list(episode(opts, suite, hooks, tid, 1, np.random.default_rng(0)))
    assert noisy[0].prompt == expert[0].prompt and noisy[0].completion == expert[0].completion
    assert {d.prompt for d in noisy[1:]}.isdisjoint({d.prompt for d in expert})  # off the path


def test_prompts_are_what_the_hf_prior_renders_at_run_time(tmp_path: Path) -> None:
    suite = TextCraftSuite(TextCraftOptions(**ENV))
    opts = options(tmp_path, [], skills=[1.0])
    tid = next(t for t in suite.task_ids("train") if len(menu_plan(suite, t)) >= 2)
    demos = list(episode(opts, suite, load_planner("textcraft"), tid, 0,
                         np.random.default_rng(0)))
    prior = HFPrior.__new__(HFPrior)  # render only: no weights needed
    prior.options, prior.env = HFOptions(**opts.prior_options()), "textcraft"
    env = suite.make()
    history = History(tid, env.reset(tid))
    for d in demos:
        assert d.prompt == prior.render(history.with_valid_actions(env.valid_actions()))
        a = d.completion.strip()
        r = env.step(a)
        history = history.extend(Step(f"Action: {a}", a, r.observation, r.reward, r.done))
    assert "solved example" not in demos[0].prompt and demos[0].prompt.startswith("Observation:")


def test_written_demonstrations_read_back_with_a_stable_hash(tmp_path: Path) -> None:
    demos = [Demo("3", 0, 0, "Observation: x\nAction:", " get 1 stick\n")]
    h1 = write_demos(demos, tmp_path / "a.jsonl")
    assert read_demos(tmp_path / "a.jsonl") == demos
    assert write_demos(demos, tmp_path / "b.jsonl") == h1
    assert write_demos([*demos, demos[0]], tmp_path / "c.jsonl") != h1
