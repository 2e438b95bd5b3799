"""The SciWorld planner of planner-mix: the gold path, followed in order through detours."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import numpy as np
import pytest

from amc.envs.sciworld.env import SciWorldOptions, SciWorldSuite
from amc.envs.sciworld.planner import gold_progress, sciworld_next_action
from amc.priors.planner_mix import PlannerMixOptions, PlannerMixPrior, load_planner
from amc.types import INVALID_ACTION, History, Step

SHORT = "3464"  # find-non-living-thing: a 7-action gold path (tests/envs/sciworld/test_sciworld)


def test_gold_progress_is_the_longest_gold_prefix_taken_in_order() -> None:
    gold = ["open door", "go to hall", "pick up ball", "focus on ball"]
    assert gold_progress(gold, []) == 0
    assert gold_progress(gold, ["open door", "look around", "go to hall"]) == 2  # detour kept
    assert gold_progress(gold, ["go to hall", "open door"]) == 1  # order matters
    assert gold_progress(gold, ["open door", "open door", "go to hall "]) == 2  # repeats, spaces
    assert gold_progress(gold, [*gold, "look around"]) == 4
    assert gold_progress([], ["open door"]) == 0


def test_the_planner_needs_a_sciworld_env() -> None:
    with pytest.raises(TypeError, match="HistoryView"):
        sciworld_next_action(object())


@pytest.fixture(scope="module")
def sciworld() -> Iterator[SciWorldSuite]:
    """Two JVMs; the action menu on (the prior's random branch draws from it)."""
    suite = SciWorldSuite(SciWorldOptions(pool_size=2, enumerate_actions=True))
    yield suite
    suite.close()


async def _episode(suite: SciWorldSuite, prior: PlannerMixPrior, rng: np.random.Generator,
                   forced: dict[int, str] | None = None, max_steps: int = 20) -> History:
    """The prior on SHORT in a fresh env; ``forced``: step index -> action played instead."""
    env = suite.make()
    try:
        h = History(SHORT, env.reset(SHORT))
        while not h.done and h.t < max_steps:
            if prior.wants_valid_actions:  # as the driver does, from the particle's own env
                h = h.with_valid_actions(env.valid_actions())
            action = (forced or {}).get(h.t) or (await prior.propose(h, rng)).action
            res = env.step(action)
            h = h.extend(Step(action, action, res.observation, res.reward, res.done))
        return h
    finally:
        env.close()


@pytest.mark.slow
def test_q1_follows_the_gold_path_through_a_harmless_detour(sciworld: SciWorldSuite) -> None:
    gold = sciworld.gold_actions(SHORT)
    assert sciworld.gold_actions(SHORT) == gold  # memoised: the same list, asked again
    prior = PlannerMixPrior(sciworld, load_planner("sciworld"), PlannerMixOptions(q=1.0))
    h = asyncio.run(_episode(sciworld, prior, np.random.default_rng(0)))
    assert list(h.actions) == gold and h.done and h.total_reward == pytest.approx(1.0)
    # "look around" changes nothing: the planner resumes at the gold action it had reached
    d = asyncio.run(_episode(sciworld, prior, np.random.default_rng(0), {2: "look around"}))
    assert list(d.actions) == [*gold[:2], "look around", *gold[2:]]
    assert d.done and d.total_reward == pytest.approx(1.0)


@pytest.mark.slow
def test_q0_draws_only_from_the_menu_and_is_seeded(sciworld: SciWorldSuite) -> None:
    prior = PlannerMixPrior(sciworld, load_planner("sciworld"), PlannerMixOptions(q=0.0))
    assert prior.wants_valid_actions  # replay-free: the driver attaches the particle's menu
    env = sciworld.make()
    try:
        h0 = History(SHORT, env.reset(SHORT))
        menu = set(env.valid_actions() or ())
    finally:
        env.close()
    h = h0.with_valid_actions(sorted(menu))
    assert asyncio.run(prior.propose(h0, np.random.default_rng(0))).action == INVALID_ACTION
    draws = [asyncio.run(prior.propose(h, np.random.default_rng(s))).action for s in range(6)]
    assert menu and set(draws) <= menu and len(set(draws)) > 1
    again = [asyncio.run(prior.propose(h, np.random.default_rng(s))).action for s in range(6)]
    assert again == draws
