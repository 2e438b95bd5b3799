"""The WebShop oracle planner behind the planner-mix prior, on the generated demo catalog.

q = 1 must buy the goal's product with the goal's options on every goal (reward 1) and recover
from detours; q = 0 stays on the env's menu.
"""

from __future__ import annotations

import asyncio

import numpy as np

from amc.envs.webshop.planner import search_words, webshop_next_action
from amc.priors.planner_mix import PlannerMixOptions, PlannerMixPrior, load_planner
from amc.types import History, Step


def run(suite, task: str, q: float, seed: int = 0, detour: tuple[str, ...] = ()):
    pr = PlannerMixPrior(suite, load_planner("webshop"), PlannerMixOptions(q=q))
    env = suite.make()
    h = History(task, env.reset(task))
    rng = np.random.default_rng(seed)

    async def go(h: History) -> History:
        for a in detour:
            res = env.step(a)
            h = h.extend(Step("", a, res.observation, res.reward, res.done, info=res.info))
        while not h.done:
            turn = await pr.propose(h, rng)
            res = env.step(turn.action)
            h = h.extend(Step(turn.raw_text, turn.action, res.observation, res.reward,
                              res.done, turn.usage, res.info))
        return h

    return asyncio.run(go(h)), env


def test_q1_buys_the_goal_product_with_its_options_on_every_goal(suite):
    n = len(suite.catalog.goals)
    assert n >= 20
    for i in range(n):
        h, env = run(suite, str(i), 1.0)
        buy = h.steps[-1]
        assert buy.action == "click[buy now]", (i, h.actions)
        assert buy.info["asin"] == buy.info["goal_asin"], i
        wanted = env.goal["goal_options"]
        values = wanted.values() if isinstance(wanted, dict) else wanted
        assert {str(v).lower() for v in values} <= set(buy.info["options"].values()), i
        assert h.total_reward == 1.0, i  # the demo goals' price bounds admit their product
        assert h.t <= 3 + len(list(values)) + 4  # search, (pages), click, options, buy


def test_planner_recovers_from_detours(suite):
    h, _ = run(suite, "3", 1.0, detour=("search[coffee mugs]", "click[back to search]"))
    assert h.steps[-1].info["asin"] == h.steps[-1].info["goal_asin"]


def test_q0_stays_on_the_menu(suite):
    env = suite.make()
    env.reset("0")
    h, _ = run(suite, "0", 0.0, seed=1)
    assert h.steps[0].action in env.valid_actions()
    assert search_words("Find me a T-Shirt, and price lower than 40.00!") == (
        "find me a t-shirt and price lower than 40.00")
    assert webshop_next_action(env).startswith("search[find me")
