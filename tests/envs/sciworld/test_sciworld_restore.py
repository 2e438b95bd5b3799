"""SciWorld's restore ability (what the rollout value forks through), on the real simulator.

A restored environment takes a particle's history as its record without touching a
simulator; its forks replay that record and check every answer. So a fork of a restored
history continues exactly as the original episode does, and a history the simulator does not
reproduce (a tampered observation or score) fails on the fork, never silently.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from amc.envs.sciworld.env import ReplayMismatchError, SciWorldOptions, SciWorldSuite
from amc.protocols import RestoresHistory
from amc.types import INVALID_ACTION, History, Step

GAME = "3471"  # find-non-living-thing: look around, focus on orange wire, move it to the box


@pytest.fixture(scope="module")
def suite() -> Iterator[SciWorldSuite]:
    s = SciWorldSuite(SciWorldOptions(pool_size=2))
    yield s
    s.close()


def played(suite: SciWorldSuite, actions: list[str]) -> History:
    env = suite.make()
    try:
        h = History(GAME, env.reset(GAME))
        for a in actions:
            r = env.step(a)
            h = h.extend(Step("", a, r.observation, r.reward, r.done, info=r.info))
        return h
    finally:
        env.close()


@pytest.mark.slow
def test_a_fork_of_a_restored_history_continues_like_the_episode(suite: SciWorldSuite) -> None:
    gold = suite.gold_actions(GAME)
    h = played(suite, [gold[0], INVALID_ACTION, gold[1]])  # an unsent step in the record
    root = suite.make()
    assert isinstance(root, RestoresHistory)
    try:
        before = suite.pool.stats.handouts
        root.restore(h)
        assert suite.pool.stats.handouts == before  # no simulator used: the fork replays
        fork = root.fork()
        try:
            last = fork.step(gold[2])
        finally:
            fork.close()
    finally:
        root.close()
    full = played(suite, [gold[0], INVALID_ACTION, gold[1], gold[2]])
    assert (last.observation, last.reward, last.done) == (
        full.steps[-1].observation, full.steps[-1].reward, True)
    assert h.total_reward + last.reward == pytest.approx(1.0)


@pytest.mark.slow
def test_a_history_the_simulator_does_not_reproduce_fails_on_the_fork(
        suite: SciWorldSuite) -> None:
    gold = suite.gold_actions(GAME)
    h = played(suite, gold[:2])
    bad_obs = replace(h, steps=(h.steps[0], replace(h.steps[1], observation="something else")))
    bad_score = replace(h, steps=(h.steps[0], replace(h.steps[1], info={"score": 99})))
    bad_start = replace(h, observation0=h.observation0 + " (edited)")
    for bad in (bad_obs, bad_score, bad_start):
        root = suite.make()
        try:
            root.restore(bad)
            with pytest.raises(ReplayMismatchError):
                root.fork()
        finally:
            root.close()
    root = suite.make()
    with pytest.raises(ValueError, match="info\\['score'\\]"):
        root.restore(replace(h, steps=(replace(h.steps[0], info={}),)))
    root.close()
