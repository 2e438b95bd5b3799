"""The textcraft-progress value: 0 at the start, 1 when the goal is held, a step of 1 / L along
the planner's plan, flat for a wasted step; refused outside TextCraft."""

from __future__ import annotations

import asyncio

import pytest

from amc.envs.replay import build_suite
from amc.envs.textcraft.planner import next_action, plan_length
from amc.registry import VALUES
from amc.types import History, Step

ENV_OPTIONS = {"min_depth": 2, "max_depth": 2, "n_distractors": 10, "reward": "binary"}


@pytest.fixture(scope="module")
def setup():
    suite = build_suite("textcraft", ENV_OPTIONS)
    value = VALUES.build("textcraft-progress", None, env_name="textcraft",
                         env_options=ENV_OPTIONS)
    yield suite, value
    suite.close()


def _play(env, task: str, actions: list[str]) -> History:
    obs0 = env.reset(task)
    steps = []
    for a in actions:
        s = env.step(a)
        steps.append(Step(a, a, s.observation, s.reward, s.done))
    return History(task, obs0, tuple(steps))


def _values(value, histories: list[History]) -> list[float]:
    return asyncio.run(value.score(histories))


def test_rises_by_one_plan_step_along_the_planners_plan(setup):
    suite, value = setup
    env = suite.make()
    for task in suite.task_ids("train")[:5]:
        env.reset(task)
        full = plan_length(env.book, env.goal)
        actions: list[str] = []
        while (a := next_action(env.book, env.goal, env.inventory)) is not None:
            env.step(a)
            actions.append(a)
        prefixes = [_play(env, task, actions[:t]) for t in range(len(actions) + 1)]
        assert prefixes[-1].steps[-1].done
        got = _values(value, prefixes)
        assert got == pytest.approx([t / full for t in range(full + 1)])


def test_a_wasted_step_keeps_it_and_spending_planned_ingredients_lowers_it(setup):
    suite, value = setup
    env = suite.make()
    for task in suite.task_ids("train"):
        env.reset(task)
        first = next_action(env.book, env.goal, {})
        env.step(first)
        second = next_action(env.book, env.goal, env.inventory)
        if second is not None and second.startswith("craft"):
            break
    else:
        pytest.fail("no depth-2 task crafts at its second planned step")
    wasted = _play(env, task, [first, "craft 1 goal using nothing", "inventory"])
    done1 = _play(env, task, [first])
    v0, v1, v_wasted = _values(value, [_play(env, task, []), done1, wasted])
    assert v0 == 0.0 < v1 == v_wasted
    assert _values(value, [_play(env, task, [first, second])])[0] > v1


def test_no_goal_in_the_first_observation_is_zero(setup):
    _, value = setup
    assert _values(value, [History("x", "no goal here", ())]) == [0.0]


def test_refuses_another_environment():
    with pytest.raises(ValueError, match="TextCraft"):
        VALUES.build("textcraft-progress", None, env_name="webshop", env_options={})


def test_each_refused_action_costs_the_declared_plan_steps(setup):
    suite, plain = setup
    charged = VALUES.build("textcraft-progress", {"invalid_penalty": 0.5}, env_name="textcraft",
                           env_options=ENV_OPTIONS)
    env = suite.make()
    task = suite.task_ids("train")[0]
    env.reset(task)
    full = plan_length(env.book, env.goal)
    first = next_action(env.book, env.goal, {})
    refused = ["get 1 unobtainium", "craft 1 goal using nothing"]
    h = _play(env, task, [first, *refused, "inventory"])
    assert [s.observation.split()[0] for s in h.steps[1:]] == ["Could", "Wrong", "Inventory:"]
    (v_plain,), (v_charged,) = _values(plain, [h]), _values(charged, [h])
    assert v_plain == pytest.approx(1 / full)
    assert v_charged == pytest.approx(max(1 / full - 2 * 0.5 / full, 0.0))
    clean = _play(env, task, [first, "inventory", "inventory"])  # same inventory, no refusal
    assert _values(charged, [clean]) == [pytest.approx(1 / full)]
    with pytest.raises(ValueError, match="invalid_penalty"):
        VALUES.build("textcraft-progress", {"invalid_penalty": -1}, env_name="textcraft",
                     env_options=ENV_OPTIONS)
