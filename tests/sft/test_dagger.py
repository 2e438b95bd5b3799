"""DAgger: the planner labels a prior's own states (replayed, rendered as the prior saw them);
the pairs join the demonstrations under the same leak check; a run starts from an adapter."""

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from amc.envs.textcraft.env import TextCraftOptions, TextCraftSuite
from amc.envs.textcraft.planner import menu_plan
from amc.priors.planner_mix import load_planner
from amc.sft.config import DemoOptions, SFTOptions
from amc.sft.dagger import all_demos, is_own_state, label_rollout, read_rollouts
from amc.sft.demos import check_no_leak, render
from amc.sft.loop import CHECKPOINTS, train
from amc.sft.trainer import load_lora
from amc.types import History, Step
from tests.sft.test_trainer import DEMOS, opts_for

ENV = {"min_depth": 1, "max_depth": 2, "n_distractors": 2}


def random_rollout(suite: TextCraftSuite, tid: str, steps: int, seed: int) -> History:
    """A rollout of uniformly random valid actions (states the planner never visits)."""
    rng, env = np.random.default_rng(seed), suite.make()
    h = History(tid, env.reset(tid))
    for _ in range(steps):
        menu = env.valid_actions()
        a = menu[int(rng.integers(len(menu)))]
        r = env.step(a)
        h = h.extend(Step(f"Action: {a}", a, r.observation, r.reward, r.done))
        if r.done:
            break
    return h


def write_run(folder: Path, rollouts: list[History], gz: bool) -> None:
    """``amc run``'s seed-file layout: one record per task with its trajectories."""
    folder.mkdir(parents=True)
    lines = "".join(json.dumps({"task_id": h.task_id, "seed": 0, "observation0":
                                h.prefix(0).observation,
                                "trajectories": [{"steps": [s.to_dict() for s in h.steps]}]})
                    + "\n" for h in rollouts)
    if gz:
        with gzip.open(folder / "bon@1__seed0.jsonl.gz", "wt") as f:
            f.write(lines + '{"task_id": "torn')  # a killed run's last line
    else:
        (folder / "bon@1__seed0.jsonl").write_text(lines)


def test_own_states_get_the_planners_label_and_the_prompt_the_prior_saw() -> None:
    suite = TextCraftSuite(TextCraftOptions(**ENV))
    opts = SFTOptions(env_options=ENV, demos=DemoOptions(skills=[1.0]))
    hooks = load_planner("textcraft")
    tid = next(t for t in suite.task_ids("train") if len(menu_plan(suite, t)) >= 3)
    rollout = next(r for r in (random_rollout(suite, tid, 6, seed=s) for s in range(50))
                   if r.t >= 4)
    pairs = list(label_rollout(opts, suite, hooks, rollout, episode=1))
    assert [d.t for d in pairs] == list(range(len(pairs))) and len(pairs) >= 3
    env = suite.make()
    env.reset(tid)
    for d, step in zip(pairs, rollout.steps, strict=False):
        want = hooks.to_menu(env, hooks.next_action(env)) if hooks.to_menu else \
            hooks.next_action(env)
        assert d.completion == f" {want}\n"  # the planner's, not the action the rollout took
        assert d.prompt == render(opts, rollout.prefix(d.t).with_valid_actions(
            env.valid_actions()))
        env.step(step.action)
    assert any(d.completion.strip() != s.action for d, s in zip(pairs, rollout.steps,
                                                                 strict=False))
    assert all(is_own_state(d, opts) for d in pairs)


def test_a_rollout_the_environment_does_not_reproduce_is_refused() -> None:
    suite = TextCraftSuite(TextCraftOptions(**ENV))
    opts = SFTOptions(env_options=ENV, demos=DemoOptions(skills=[1.0]))
    a, b = suite.task_ids("train")[3], suite.task_ids("train")[4]
    rollout = random_rollout(suite, a, 3, seed=0)
    other = History(b, rollout.prefix(0).observation, rollout.steps)
    with pytest.raises(ValueError, match="first observation"):
        list(label_rollout(opts, suite, load_planner("textcraft"),
                           History(a, "Crafting commands: none", rollout.steps), 1))
    edited = History(a, rollout.prefix(0).observation,
                     (rollout.steps[0].__class__(**{**rollout.steps[0].to_dict(),
                                                    "observation": "Got 9 gold."}),))
    with pytest.raises(ValueError, match="another observation"):
        list(label_rollout(opts, suite, load_planner("textcraft"), edited, 1))
    assert other.task_id == b


def test_rollout_pairs_join_the_demonstrations_under_the_leak_check(tmp_path: Path) -> None:
    suite = TextCraftSuite(TextCraftOptions(**ENV))
    train_ids = suite.task_ids("train")
    held = tmp_path / "held.json"
    held.write_text(json.dumps([train_ids[0]]))
    ok = [random_rollout(suite, t, 4, seed=i) for i, t in enumerate(train_ids[1:3])]
    write_run(tmp_path / "run", ok, gz=True)
    assert [h.task_id for h in read_rollouts(tmp_path / "run")] == train_ids[1:3]
    opts = SFTOptions(env_options=ENV, demos=DemoOptions(
        skills=[1.0], max_tasks=3, exclude_tasks_files=[str(held)],
        rollout_dirs=[str(tmp_path / "run")]))
    demos = all_demos(opts, suite)
    own = [d for d in demos if is_own_state(d, opts)]
    assert {d.task_id for d in own} <= set(train_ids[1:3]) and {d.episode for d in own} == {1}
    assert own and all(d.t > 0 for d in own)  # the first state is the planner's episode's too
    assert len({(d.task_id, d.prompt) for d in demos}) == len(demos)  # each state once
    write_run(tmp_path / "leak", [random_rollout(suite, train_ids[0], 2, seed=0)], gz=False)
    leaky = opts.model_copy(update={"demos": opts.demos.model_copy(
        update={"rollout_dirs": [str(tmp_path / "leak")]})})
    with pytest.raises(ValueError, match=f"leak held-out.*{train_ids[0]}"):
        check_no_leak(all_demos(leaky, suite), leaky, suite)
    with pytest.raises(FileNotFoundError, match="no amc run seed files"):
        read_rollouts(tmp_path)


def test_a_run_starts_from_an_adapter_and_scores_it_first(toy_lm: Path, tmp_path: Path) -> None:
    first = train(opts_for(toy_lm, tmp_path / "a", epochs=1.0), DEMOS, "h", log=lambda _: None)
    start = tmp_path / "a" / CHECKPOINTS / "step-000002"
    assert first.checkpoints and start.is_dir()
    cont = opts_for(toy_lm, tmp_path / "b", epochs=5.0, max_steps=3, init_adapter=str(start))
    model, _, _ = load_lora(cont)
    fresh, _, _ = load_lora(opts_for(toy_lm, tmp_path / "c"))
    from safetensors.torch import load_file
    saved = load_file(str(start / "adapter_model.safetensors"))
    lora = {k: v for k, v in model.state_dict().items() if "lora_" in k}
    assert len(saved) == len(lora)
    for k, v in lora.items():
        match = [s for s in saved if k.replace(".default", "") == s]
        assert match and torch.equal(v, saved[match[0]])
    assert any(not torch.equal(v, fresh.state_dict()[k]) for k, v in lora.items())
    res = train(cont, DEMOS, "h", log=lambda _: None)
    assert len(res.curve) == 3  # max_steps caps five epochs
    assert set(res.initial) == {"val_loss", "val_action_acc"}
    with pytest.raises(ValueError, match="do not match"):
        load_lora(opts_for(toy_lm, tmp_path / "d", lora_r=4, init_adapter=str(start)))
