"""The deployable selection inside the driver: one batched, reward-free call over the whole pool.

Kills: the selection reading the reward (histories with rewards, or the terminal step, reach
the value), finished trajectories that resampling dropped missing from the pool, and the
selection value being the oracle under another name.
"""

import asyncio
import math

import pytest

from amc.config import SMCConfig
from amc.smc.records import TaskResult
from amc.smc.sampler import run_task
from tests.smc.conftest import BETA, TASK


class Recording:
    """A selection value that records what it saw and scores by the observation text only."""

    def __init__(self, reads_reward: bool = False):
        self.calls: list[list] = []
        self.reads_reward = reads_reward

    async def score(self, histories):
        self.calls.append(list(histories))
        if self.reads_reward:  # a value that would cheat if it could
            return [h.total_reward for h in histories]
        return [(sum(map(ord, h.observation)) % 101) / 100 + len(h.steps) for h in histories]

    async def aclose(self):
        pass


def _run(synth, smc, selection, seed=0):
    return asyncio.run(run_task(suite=synth["suite"], prior=synth["prior"], value=synth["exact"],
                                task_id=TASK, smc=smc, seed=seed, selection=selection))


SMC = SMCConfig(n_particles=8, max_steps=4, beta=BETA, resample="fixed", resample_steps=(1, 2),
                resample_terminated=True)


def test_one_batched_call_over_the_whole_pool_with_pre_terminal_reward_free_states(synth):
    dropped_seen = False
    for seed in range(6):
        sel = Recording()
        res = _run(synth, SMC, sel, seed)
        pool = [r for r in res.trajectories if r.failure is None]
        dropped_seen |= any(r.slot is None for r in pool)
        assert len(sel.calls) == 1 and len(sel.calls[0]) == len(pool)
        for h, r in zip(sel.calls[0], pool, strict=True):
            assert h.total_reward == 0.0 and not h.done  # masked, and not the terminal state
            assert len(h.steps) == len(r.steps) - int(r.done)
        values = [r.selection_value for r in pool]
        best = pool[max(range(len(pool)), key=lambda i: (values[i], -i))]
        assert res.metrics["deployable_reward"] == best.total_reward
        assert res.metrics["oracle_best"] == max(r.total_reward for r in pool)
        # the budget the particles ran under reaches the selection value and the record
        assert {h.budget for h in sel.calls[0]} == {SMC.max_steps} == {res.budget}
        assert TaskResult.from_dict(res.to_dict()).budget == SMC.max_steps
    assert dropped_seen  # the check above covered trajectories that resampling dropped


def test_a_value_that_reads_rewards_sees_none(synth):
    smc = SMCConfig(n_particles=8, max_steps=4, beta=BETA, resample="never")
    sel = Recording(reads_reward=True)
    res = _run(synth, smc, sel)
    assert all(r.selection_value == 0.0 for r in res.trajectories)
    # all tied at 0: the first trajectory of the pool, not the best one
    assert res.metrics["deployable_reward"] == res.trajectories[0].total_reward


def test_without_selection_the_deployable_metric_is_nan_and_nothing_is_recorded(synth):
    res = _run(synth, SMC, None)
    assert math.isnan(res.metrics["deployable_reward"])
    assert all(r.selection_value is None for r in res.trajectories)
    back = type(res).from_dict(res.to_dict())
    assert math.isnan(back.metrics["deployable_reward"])
    assert back.trajectories == res.trajectories


def test_best_of_n_deployable_differs_from_its_max_weight_which_is_the_oracle(synth):
    smc = SMCConfig(n_particles=8, max_steps=4, beta=BETA, resample="never")
    rs = [_run(synth, smc, Recording(), seed) for seed in range(8)]
    for r in rs:  # the max-weight selection uses the reward: for Best-of-N it is the oracle
        assert r.metrics["max_weight_reward"] == pytest.approx(r.metrics["oracle_best"])
    assert any(r.metrics["deployable_reward"] < r.metrics["oracle_best"] for r in rs)
