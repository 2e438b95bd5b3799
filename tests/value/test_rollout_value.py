"""The Monte-Carlo rollout value: f(s) = beta log mean exp(R_m / beta) over M prior rollouts.

Checked against the exact soft value of the synthetic tree (within Monte-Carlo error), against
a deterministic prior on TextCraft (exact 1 or 0 depending on the remaining budget), and for
order independence, caching and usage.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from amc.envs.synthetic import SyntheticOptions, SyntheticPrior, SyntheticSuite, SyntheticTree
from amc.envs.textcraft.env import TextCraftOptions, TextCraftSuite
from amc.envs.textcraft.tasks import plan
from amc.priors.planner_mix import PlannerMixOptions, PlannerMixPrior, load_planner
from amc.registry import VALUES
from amc.types import History, Step
from amc.value.rollout import RolloutValue, RolloutValueOptions, soft_mean

TASK = "18"  # the synthetic tree the driver tests use (posterior far from the prior)


def walk(suite, task: str, actions: list[str]) -> History:
    env = suite.make()
    h = History(task, env.reset(task))
    for a in actions:
        res = env.step(a)
        h = h.extend(Step("", a, res.observation, res.reward, res.done, info=res.info))
    return h


@pytest.mark.parametrize(("beta", "concurrent"), [(0.25, False), (1.0, False), (1.0, True)])
def test_matches_the_exact_soft_value_on_the_synthetic_tree(beta, concurrent):
    opts = SyntheticOptions()
    suite, tree = SyntheticSuite(opts), SyntheticTree.build(TASK, opts)
    value = RolloutValue(suite, SyntheticPrior(opts), beta,
                         RolloutValueOptions(n_rollouts=1500, max_steps=opts.depth,
                                             concurrent=concurrent))
    exact = tree.soft_values(beta)
    nodes = [(), (0,), (1,), (2,)]
    nodes = [n for n in nodes if not tree.terminal[n]]
    assert len(nodes) >= 3
    spread = []
    for node in nodes:
        h = walk(suite, TASK, [f"a{a}" for a in node])
        returns, _ = asyncio.run(value.returns(h))
        y = np.exp(returns / beta)
        se = beta * y.std(ddof=1) / (y.mean() * np.sqrt(y.size))  # delta method
        f = asyncio.run(value.score([h]))[0]
        assert f == pytest.approx(soft_mean(returns, beta))
        assert abs(f - beta * exact[node]) < 4 * se + 1e-9, (node, f, beta * exact[node], se)
        spread.append(beta * exact[node])
    assert max(spread) - min(spread) > 0.05  # the nodes differ: the check can tell them apart


def test_beta_to_infinity_gives_the_mean_future_reward():
    assert soft_mean(np.array([0.0, 1.0, 1.0, 0.0]), 1e6) == pytest.approx(0.5, abs=1e-5)
    assert soft_mean(np.array([0.0, 1.0]), 0.01) == pytest.approx(1 - 0.01 * np.log(2))


@pytest.fixture(scope="module")
def craft():
    suite = TextCraftSuite(TextCraftOptions(min_depth=2, max_depth=2))
    task = suite.task_ids("all")[3]
    return suite, task, len(plan(suite.book, suite.tasks.goal(task)))


def make_value(suite, q: float, max_steps: int, m: int = 8, **kw) -> RolloutValue:
    pr = PlannerMixPrior(suite, load_planner("textcraft"), PlannerMixOptions(q=q))
    return RolloutValue(suite, pr, 0.25, RolloutValueOptions(n_rollouts=m, max_steps=max_steps,
                                                             **kw))


def test_budget_is_max_steps_minus_t_with_a_deterministic_prior(craft):
    """q = 1 solves the task in exactly L steps: f = 1 iff L more steps are allowed."""
    suite, task, n_opt = craft
    h0 = walk(suite, task, [])
    assert asyncio.run(make_value(suite, 1.0, n_opt).score([h0])) == [pytest.approx(1.0)]
    assert asyncio.run(make_value(suite, 1.0, n_opt - 1).score([h0])) == [0.0]
    h1 = walk(suite, task, ["inventory"])  # a wasted step: one more is needed from here
    assert asyncio.run(make_value(suite, 1.0, n_opt).score([h1])) == [0.0]
    assert asyncio.run(make_value(suite, 1.0, n_opt + 1).score([h1])) == [pytest.approx(1.0)]
    done = walk(suite, task, plan(suite.book, suite.tasks.goal(task)))
    assert done.done and asyncio.run(make_value(suite, 1.0, 50).score([done])) == [0.0]


def test_usage_counts_the_rollouts_prior_calls_at_zero_tokens(craft):
    suite, task, n_opt = craft
    value = make_value(suite, 1.0, n_opt, m=5)
    _, usage = asyncio.run(value.score_with_usage([walk(suite, task, [])]))
    assert usage.calls == 5 * n_opt and usage.total_tokens == 0


def test_values_depend_on_the_state_only_not_on_call_order(craft):
    suite, task, n_opt = craft
    menu = suite.make()
    menu.reset(task)
    hs = [walk(suite, task, [a]) for a in menu.valid_actions()[:4]]
    a = asyncio.run(make_value(suite, 0.7, n_opt + 3, cache_size=0).score(hs))
    b = asyncio.run(make_value(suite, 0.7, n_opt + 3, cache_size=0).score(hs[::-1]))
    c = [asyncio.run(make_value(suite, 0.7, n_opt + 3).score([h]))[0] for h in hs]
    assert a == b[::-1] == c
    assert len(set(a)) > 1  # different states, different values: not a constant
    other = asyncio.run(make_value(suite, 0.7, n_opt + 3, m=8, seed=1, cache_size=0).score(hs))
    assert other != a  # the seed matters: the rollouts are random


class InFlight:
    """The planner-mix prior, counting how many of its calls are in flight at once."""

    def __init__(self, prior):
        self.prior, self.now, self.most, self.calls = prior, 0, 0, 0

    def __getattr__(self, name):
        return getattr(self.prior, name)

    async def propose(self, history, rng):
        self.now, self.calls = self.now + 1, self.calls + 1
        self.most = max(self.most, self.now)
        await asyncio.sleep(0)  # a batching prior waits here for the rest of its batch
        try:
            return await self.prior.propose(history, rng)
        finally:
            self.now -= 1


def test_concurrent_rollouts_are_one_batch_and_still_a_function_of_the_state(craft):
    """``concurrent``: every rollout of every state of a call is in flight at once (what lets
    the hf prior decode them as one batch), and f stays a function of the state: the same
    values in any order, one state at a time or with duplicates, each state's rollouts
    billed once."""
    suite, task, n_opt = craft
    menu = suite.make()
    menu.reset(task)
    hs = [walk(suite, task, [a]) for a in menu.valid_actions()[:4]]

    def value(**kw):
        v = make_value(suite, 0.7, n_opt + 3, m=6, concurrent=True, **kw)
        v.prior = InFlight(v.prior)
        return v

    v = value(cache_size=0)
    a, usage = asyncio.run(v.score_with_usage([*hs, hs[0]]))
    assert v.prior.most == 4 * 6  # 4 distinct states x M rollouts, not one call at a time
    assert a[0] == a[-1] and usage.calls == v.prior.calls
    b = asyncio.run(value(cache_size=0).score(hs[::-1]))
    c = [asyncio.run(value().score([h]))[0] for h in hs]
    assert a[:-1] == b[::-1] == c and len(set(c)) > 1
    cached = value()
    asyncio.run(cached.score(hs[:2]))
    assert asyncio.run(cached.score_with_usage(hs)) == (c, asyncio.run(
        value().score_with_usage(hs[2:]))[1])  # the cached two cost nothing again


def test_factory_needs_the_prior_and_the_budget():
    ctx = {"env_name": "synthetic", "env_options": SyntheticOptions(), "beta": 0.5}
    with pytest.raises(ValueError, match="max_steps"):
        VALUES.build("rollout", {}, prior=SyntheticPrior(SyntheticOptions()), **ctx)
    with pytest.raises(ValueError, match="prior"):
        VALUES.build("rollout", {"max_steps": 3}, **ctx)
    v = VALUES.build("rollout", {"max_steps": 3}, prior=SyntheticPrior(SyntheticOptions()),
                     **ctx)
    assert isinstance(v, RolloutValue) and v.beta == 0.5


def test_a_rollout_that_uses_up_the_budget_ends_with_the_forced_final_action():
    """As the driver ends a particle: an env that forces a last action (WebShop's buy) has it
    stepped after the budget, and its reward counts. Exact mean future reward by enumeration
    (beta -> infinity); a rollout that skips the forced step misses the second term."""
    from amc.envs.synthetic import SyntheticEnv

    class ForcingEnv(SyntheticEnv):
        def final_action(self) -> str | None:
            return None if self.tree is None or self.tree.terminal[self.node] else "a0"

        def fork(self) -> ForcingEnv:
            env = ForcingEnv(self.options)
            env.tree, env.node = self.tree, self.node
            return env

        def restore(self, history: History) -> None:  # the fork path's ability
            self.reset(history.task_id)
            for a in history.actions:
                self.step(a)

    class ForcingSuite(SyntheticSuite):
        def make(self) -> ForcingEnv:
            return ForcingEnv(self.options)

    opts = SyntheticOptions()
    tree = SyntheticTree.build(TASK, opts)
    k = opts.depth - 1  # the budget ends one step before the leaves, where the rewards are

    def mean_future(node: tuple[int, ...], left: int, force: bool) -> float:
        if tree.terminal[node]:
            return 0.0
        if left == 0:
            return tree.reward[(*node, 0)] if force else 0.0
        return sum(tree.policy[node][c[-1]] * (tree.reward[c] + mean_future(c, left - 1, force))
                   for c in tree.children(node))

    exact, without = mean_future((), k, True), mean_future((), k, False)
    assert exact - without > 0.05  # the forced step carries reward here: the check can tell
    beta, m = 1e6, 4000
    for states in ("replay", "fork"):
        value = RolloutValue(ForcingSuite(opts), SyntheticPrior(opts), beta,
                             RolloutValueOptions(n_rollouts=m, max_steps=k, states=states))
        returns, _ = asyncio.run(value.returns(walk(ForcingSuite(opts), TASK, [])))
        se = returns.std(ddof=1) / np.sqrt(m)
        assert abs(returns.mean() - exact) < 4 * se + 1e-9, (states, returns.mean(), exact)
