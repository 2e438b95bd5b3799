"""Errors never leak environments nor step closed ones; failed particles never compete."""

import asyncio
import math
import threading
import time

import numpy as np
import pytest

from amc.config import SMCConfig
from amc.smc.sampler import run_task
from amc.types import AgentTurn, EnvStep, Usage

BETA, TASK = 0.5, "18"  # as in conftest.py


class Ledger:
    """What happened to every environment of a run (thread-safe: io-bound envs use threads)."""

    def __init__(self, fail_fork_at=None, fail_step_of=None, slow_s=0.0, fail_close_at=None):
        self.lock = threading.Lock()
        self.envs, self.forks, self.closes, self.problems = [], 0, 0, []
        self.fail_fork_at, self.fail_step_of, self.slow_s = fail_fork_at, fail_step_of, slow_s
        self.fail_close_at = fail_close_at  # the k-th close call of the run raises


class FaultySuite:
    """The synthetic suite behind io-bound environments that can fail on a fork or a step."""

    name = "synthetic"

    def __init__(self, inner, ledger):
        self.inner, self.ledger = inner, ledger

    def make(self):
        return FaultyEnv(self.inner.make(), self.ledger)

    def task_ids(self, split):
        return self.inner.task_ids(split)

    def close(self):
        pass


class FaultyEnv:
    io_bound = True  # run in worker threads, so siblings really overlap

    def __init__(self, env, ledger):
        self.env, self.ledger = env, ledger
        self.closes, self.active = 0, 0
        with ledger.lock:
            self.index = len(ledger.envs)
            ledger.envs.append(self)

    def _note(self, what):
        with self.ledger.lock:
            self.ledger.problems.append(f"env {self.index}: {what}")

    def reset(self, task_id):
        return self.env.reset(task_id)

    def valid_actions(self):
        return self.env.valid_actions()

    def step(self, action):
        if self.closes:
            self._note("step after close")
        self.active += 1
        try:
            if self.index == self.ledger.fail_step_of:
                raise RuntimeError("simulator crashed")
            time.sleep(self.ledger.slow_s)  # siblings are still running when one fails
            return self.env.step(action)
        finally:
            self.active -= 1

    def fork(self):
        with self.ledger.lock:
            self.ledger.forks += 1
            k = self.ledger.forks
        if k == self.ledger.fail_fork_at:
            raise RuntimeError(f"fork {k} failed")
        return FaultyEnv(self.env.fork(), self.ledger)

    def close(self):
        if self.active:
            self._note("closed while a step was running")
        self.closes += 1
        with self.ledger.lock:
            self.ledger.closes += 1
            k = self.ledger.closes
        if k == self.ledger.fail_close_at:
            raise RuntimeError(f"close {k} failed")


def _run(synth, ledger, **kw):
    smc = SMCConfig(n_particles=kw.pop("n", 8), max_steps=3, beta=BETA, resample="fixed",
                    resample_steps=(1, 2), resample_terminated=True, **kw)
    return asyncio.run(run_task(suite=FaultySuite(synth["suite"], ledger), prior=synth["prior"],
                                value=synth["exact"], task_id=TASK, smc=smc, seed=0))


def _assert_clean(ledger):
    assert ledger.problems == []
    assert [e.closes for e in ledger.envs] == [1] * len(ledger.envs), "each env closed once"


def test_a_clean_run_closes_every_environment_once(synth):
    ledger = Ledger()
    _run(synth, ledger)
    assert len(ledger.envs) > 8  # resampling forked some
    _assert_clean(ledger)


@pytest.mark.parametrize("k", [1, 3, 7])
def test_a_failed_initial_fork_closes_what_was_made(synth, k):
    ledger = Ledger(fail_fork_at=k)
    with pytest.raises(RuntimeError, match=f"fork {k} failed"):
        _run(synth, ledger)
    assert len(ledger.envs) == k  # the root and the k - 1 forks that worked
    _assert_clean(ledger)


@pytest.mark.parametrize("extra", [1, 2, 4])
def test_a_failed_fork_while_resampling_closes_its_siblings_and_the_population(synth, extra):
    ledger = Ledger(fail_fork_at=7 + extra)  # 7 initial forks, then resampling's
    with pytest.raises(RuntimeError, match="failed"):
        _run(synth, ledger)
    assert ledger.forks >= 7 + extra and len(ledger.envs) > 8
    _assert_clean(ledger)


@pytest.mark.parametrize("who", [0, 5])
def test_a_failed_step_lets_running_siblings_finish_before_closing(synth, who):
    ledger = Ledger(fail_step_of=who, slow_s=0.05)
    with pytest.raises(RuntimeError, match="simulator crashed"):
        _run(synth, ledger)
    _assert_clean(ledger)


def test_a_failed_close_of_a_dropped_environment_closes_the_rest_once(synth):
    """Resampling at step 1 drops environments; the first close is one of them. The error
    stops the run before step 2's forks, and every environment -- the new population's and
    the other dropped ones -- is still closed exactly once."""
    clean = Ledger()
    _run(synth, clean)
    ledger = Ledger(fail_close_at=1)
    with pytest.raises(RuntimeError, match="close 1 failed"):
        _run(synth, ledger)
    assert 7 < ledger.forks < clean.forks  # it failed mid-run, in a step
    _assert_clean(ledger)


def test_a_failed_value_call_closes_every_environment_once(synth):
    class Broken:
        """The exact value, until its second call (step 2: after resampling forked)."""

        calls = 0

        async def score(self, histories):
            Broken.calls += 1
            if Broken.calls == 2:
                raise RuntimeError("value server down")
            return await synth["exact"].score(histories)

    ledger = Ledger()
    smc = SMCConfig(n_particles=8, max_steps=3, beta=BETA, resample="fixed",
                    resample_steps=(1, 2), resample_terminated=True)
    with pytest.raises(RuntimeError, match="value server down"):
        asyncio.run(run_task(suite=FaultySuite(synth["suite"], ledger), prior=synth["prior"],
                             value=Broken(), task_id=TASK, smc=smc, seed=0))
    assert ledger.forks > 7
    _assert_clean(ledger)


# ---------------------------------------------------------------- failed particles


def _flaky(synth, when):
    class Flaky:
        """Fails for good on the histories ``when`` picks (a 401, a context overflow...)."""

        async def propose(self, history, rng):
            if when(history, rng):
                return AgentTurn("", "", Usage(calls=1), error="HTTP 400: context too long")
            return await synth["prior"].propose(history, rng)

        async def aclose(self):
            pass

    return Flaky()


class BonusSuite(FaultySuite):
    """Task 3 of the synthetic tree, with a bonus of 5 for taking a0 (not terminal) first."""

    def make(self):
        return BonusEnv(self.inner.make(), self.ledger)


class BonusEnv(FaultyEnv):
    io_bound = False

    def step(self, action):
        res = self.env.step(action)
        bonus = 5.0 if action == "a0" and res.info["node"] == (0,) else 0.0
        return EnvStep(res.observation, res.reward + bonus, res.done, res.info)

    def fork(self):
        return BonusEnv(self.env.fork(), self.ledger)


@pytest.mark.parametrize("schedule", [dict(resample="never"),
                                      dict(resample="fixed", resample_steps=(1, 2),
                                           resample_terminated=True)])
def test_failed_particles_never_win_nor_count(synth, schedule):
    """The prior fails right after the bonus: under the old rule (retire with the partial
    reward) those particles would win the oracle, the selection and most of the weight."""
    prior = _flaky(synth, lambda hist, rng: hist.total_reward >= 5.0)
    smc = SMCConfig(n_particles=8, max_steps=3, beta=BETA, **schedule)
    would_have_won = 0
    for seed in range(12):
        ledger = Ledger()
        res = asyncio.run(run_task(suite=BonusSuite(synth["suite"], ledger), prior=prior,
                                   value=synth["zero"], task_id="3", smc=smc, seed=seed))
        _assert_clean(ledger)
        failed = [t for t in res.trajectories if t.failure]
        ok = [t for t in res.trajectories if not t.failure]
        assert len(failed) == len(res.failures), "a failed particle is never duplicated"
        assert all(math.isinf(t.final_log_weight) and t.final_log_weight < 0 for t in failed)
        would_have_won += bool(failed) and (not ok or max(t.total_reward for t in failed) > max(
            t.total_reward for t in ok))
        if not ok:
            continue
        assert res.metrics["oracle_best"] == max(t.total_reward for t in ok)
        pop_ok = [t for t in res.population if not t.failure]
        if not pop_ok:  # only failures left in the population: nothing to select
            assert math.isnan(res.metrics["max_weight_reward"])
            continue
        best = max(pop_ok, key=lambda t: t.final_log_weight)
        assert res.metrics["max_weight_reward"] == best.total_reward
        W = np.exp([t.final_log_weight for t in pop_ok])
        assert res.metrics["weighted_mean_reward"] == pytest.approx(
            np.dot(W / W.sum(), [t.total_reward for t in pop_ok]))
    assert would_have_won >= 6, "the test needs failures that would have won"


def test_a_task_whose_particles_all_fail_is_recorded_not_scored(synth):
    prior = _flaky(synth, lambda hist, rng: True)
    smc = SMCConfig(n_particles=4, max_steps=3, beta=BETA, resample="fixed", resample_steps=(1,))
    res = asyncio.run(run_task(suite=synth["suite"], prior=prior, value=synth["exact"],
                               task_id=TASK, smc=smc, seed=0))
    assert len(res.failures) == 4 and all(t.failure for t in res.trajectories)
    assert [s.t for s in res.steps] == [1] and not res.steps[0].resampled
    assert math.isnan(res.metrics["oracle_best"]) and res.metrics["success"] == 0.0
    assert res.metrics["log_z"] == -math.inf
