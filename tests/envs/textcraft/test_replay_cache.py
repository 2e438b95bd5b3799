"""ReplayCache: the state after a history prefix equals a fresh replay, whatever was cached."""

from __future__ import annotations

import numpy as np
import pytest

from amc.envs.replay import ReplayCache
from amc.envs.textcraft.env import TextCraftOptions, TextCraftSuite


@pytest.fixture(scope="module")
def suite() -> TextCraftSuite:
    return TextCraftSuite(TextCraftOptions(min_depth=2, max_depth=2))


def random_actions(suite, task: str, n: int, seed: int) -> tuple[str, ...]:
    env, rng, out = suite.make(), np.random.default_rng(seed), []
    env.reset(task)
    for _ in range(n):
        menu = env.valid_actions()
        if not menu:
            break
        out.append(menu[int(rng.integers(len(menu)))])
        env.step(out[-1])
    return tuple(out)


@pytest.mark.parametrize("size", [1, 3, 1000])
def test_state_and_step_equal_a_fresh_replay(suite, size):
    cache = ReplayCache(suite, size)
    for k, task in enumerate(suite.task_ids("all")[:20]):
        acts = random_actions(suite, task, 8, seed=k)
        for cut in (len(acts), 2, len(acts) - 1, 0):  # out of order: hits, misses, prefixes
            fresh = suite.make()
            fresh.reset(task)
            answers = [fresh.step(a) for a in acts[:cut]]
            env = cache.state(task, acts[:cut])
            assert env.inventory == fresh.inventory and env.done == fresh.done
            if cut:
                _, res = cache.step(task, acts[: cut - 1], acts[cut - 1])
                assert res == answers[-1]
    assert cache.stats["hits"] > 0


def test_cached_states_are_not_mutated_by_their_children(suite):
    cache = ReplayCache(suite)
    task = suite.task_ids("all")[0]
    acts = random_actions(suite, task, 6, seed=1)
    before = dict(cache.state(task, acts[:3]).inventory)
    cache.state(task, acts)
    assert cache.state(task, acts[:3]).inventory == before


def test_rejects_a_history_from_another_episode(suite):
    with pytest.raises(ValueError, match="another observation"):
        ReplayCache(suite).state(suite.task_ids("all")[0], (), observation0="not this task")
    with pytest.raises(ValueError, match=">= 1"):
        ReplayCache(suite, 0)
