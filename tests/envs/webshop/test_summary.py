"""WebShop's observed-state summary on real planner episodes of the generated catalog: the page
kinds it reads and the options it reports are the ones the environment records at the buy."""

from __future__ import annotations

import asyncio

import numpy as np

from amc.envs.webshop.summary import page_kind, webshop_summary
from amc.priors.planner_mix import PlannerMixOptions, PlannerMixPrior, load_planner
from amc.types import History, Step


def episode(suite, task: str) -> History:
    pr = PlannerMixPrior(suite, load_planner("webshop"), PlannerMixOptions(q=1.0))
    env, rng = suite.make(), np.random.default_rng(0)
    h = History(task, env.reset(task))

    async def go(h: History) -> History:
        while not h.done:
            turn = await pr.propose(h, rng)
            r = env.step(turn.action)
            h = h.extend(Step(turn.raw_text, turn.action, r.observation, r.reward, r.done,
                              info=r.info))
        return h

    return asyncio.run(go(h))


def test_summary_follows_real_episodes(suite) -> None:
    for task in ("0", "1", "2", "5"):
        h = episode(suite, task)
        assert webshop_summary(History(task, h.observation0)) == (
            "page: search | options chosen: none")
        kinds = [page_kind(s.observation) for s in h.steps]
        assert kinds[0] == "results" and kinds[-1] == "done" and "item" in kinds
        before_buy = History(task, h.observation0, h.steps[:-1])
        s = webshop_summary(before_buy)
        assert s.startswith("page: item | searched: ")
        chosen = set(h.steps[-1].info["options"].values())
        shown = s.split("options chosen: ")[1]
        assert (set(shown.split(", ")) if shown != "none" else set()) == chosen, (s, chosen)
