"""The rollout value's fork path: states restored by the environment, one fork per rollout.

An environment that cannot be replayed in process (SciWorld's JVM) declares
:class:`~amc.protocols.RestoresHistory`; the rollout value then restores each state once and
runs every rollout on its own fork. On the toy counter game, given that ability by a subclass
that keeps a ledger of its forks, the fork path must give exactly the replay path's estimate for
the same seeds, fork once per rollout (a reused fork continues a finished rollout: other
returns) and close every environment it made exactly once.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import pytest

from amc.envs.replay import ReplayCache
from amc.priors.planner_mix import PlannerMixOptions, PlannerMixPrior, load_planner
from amc.priors.random_valid import RandomValidPrior
from amc.protocols import RestoresHistory
from amc.types import History, Step
from amc.value.rollout import RolloutValue, RolloutValueOptions
from tests.toybench import CounterEnv, CounterSuite


@dataclass
class Ledger:
    """Every environment a suite made or forked, and how often each was closed."""

    envs: list[RestorableCounter] = field(default_factory=list)
    restored: int = 0

    def unclosed(self) -> list[int]:
        return [e.closes for e in self.envs if e.closes != 1]


@dataclass
class RestorableCounter(CounterEnv):
    """The counter game with the restore ability (replaying in process, as it can)."""

    ledger: Ledger = field(default_factory=Ledger)
    closes: int = 0
    io_bound = True  # what the rollout value's "auto" sees: forks, as for SciWorld

    def restore(self, history: History) -> None:
        if self.reset(history.task_id) != history.observation0:
            raise ValueError("another task's history")
        for a in history.actions:
            self.step(a)
        self.ledger.restored += 1

    def fork(self) -> RestorableCounter:
        child = RestorableCounter(self.target, self.count, self.done, ledger=self.ledger)
        self.ledger.envs.append(child)
        return child

    def close(self) -> None:
        self.closes += 1


class RestorableSuite(CounterSuite):
    def __init__(self) -> None:
        self.ledger = Ledger()

    def make(self) -> RestorableCounter:
        env = RestorableCounter(ledger=self.ledger)
        self.ledger.envs.append(env)
        return env


def walk(task: str, actions: list[str]) -> History:
    env = CounterEnv()
    h = History(task, env.reset(task))
    for a in actions:
        res = env.step(a)
        h = h.extend(Step("", a, res.observation, res.reward, res.done, info=res.info))
    return h


STATES = [walk("0", []), walk("0", ["down"]), walk("1", ["up"]), walk("1", ["down", "down"])]


def values(suite, prior, states: str, seed: int = 0, m: int = 6) -> list[float]:
    opts = RolloutValueOptions(n_rollouts=m, max_steps=6, seed=seed, states=states,
                               cache_size=0)
    return asyncio.run(RolloutValue(suite, prior, 0.5, opts).score(STATES))


@pytest.mark.parametrize("prior", ["random-valid", "planner-mix"])
def test_forks_give_the_replay_estimate_and_close_every_environment_once(prior):
    suite = RestorableSuite()

    def make_prior():
        if prior == "random-valid":  # asks for the menu at every rollout step
            return RandomValidPrior()
        return PlannerMixPrior(CounterSuite(), load_planner("toy-counter"),
                               PlannerMixOptions(q=0.4))

    for seed in (0, 1):
        replayed = values(CounterSuite(), make_prior(), "replay", seed)
        n_before = len(suite.ledger.envs)
        forked = values(suite, make_prior(), "auto", seed)  # io-bound + restore: forks
        assert forked == replayed
        assert len(set(forked)) > 1  # the states differ in value: not a constant
        made = suite.ledger.envs[n_before:]
        assert len(made) == 1 + len(STATES) * (1 + 6)  # the mode probe, then root + M forks
        assert suite.ledger.unclosed() == []
    assert suite.ledger.restored == 2 * len(STATES)
    assert values(CounterSuite(), make_prior(), "replay", 2) != replayed  # seeds matter


def test_fork_order_does_not_change_a_value():
    a = values(RestorableSuite(), RandomValidPrior(), "fork")
    value = RolloutValue(RestorableSuite(), RandomValidPrior(), 0.5, RolloutValueOptions(
        n_rollouts=6, max_steps=6, states="fork", cache_size=0))
    assert asyncio.run(value.score(STATES[::-1])) == a[::-1]


def test_forks_need_the_restore_ability():
    with pytest.raises(ValueError, match="RestoresHistory"):
        values(CounterSuite(), RandomValidPrior(), "fork")
    assert not isinstance(CounterEnv(), RestoresHistory)
    assert isinstance(RestorableCounter(), RestoresHistory)


def test_replay_cache_still_refuses_io_bound_environments():
    with pytest.raises(ValueError, match="io_bound"):
        ReplayCache(RestorableSuite()).state("0", ())
