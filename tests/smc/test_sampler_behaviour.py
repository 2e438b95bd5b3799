"""Driver behaviour: order independence, forking, baselines, failures and degenerate weights."""

import asyncio
import re

import numpy as np
import pytest

from amc.config import SMCConfig
from amc.envs.synthetic import SyntheticEnv
from amc.smc.methods import parse_method
from amc.smc.sampler import run_task
from amc.types import AgentTurn, Usage

BETA, TASK = 0.5, "18"  # as in conftest.py


def _comparable(res):
    d = res.to_dict()
    d.pop("wall_s")
    return d


class JitteryPrior:
    """Wraps a prior with random latencies from an *unrelated* generator (network jitter)."""

    def __init__(self, inner, seed):
        self.inner, self.jitter = inner, np.random.default_rng(seed)

    async def propose(self, history, rng):
        await asyncio.sleep(float(self.jitter.uniform(0, 0.004)))
        return await self.inner.propose(history, rng)

    async def aclose(self):
        pass


class JitteryValue:
    def __init__(self, inner, seed):
        self.inner, self.jitter = inner, np.random.default_rng(seed)

    async def score(self, hs):
        await asyncio.sleep(float(self.jitter.uniform(0, 0.004)))
        return await self.inner.score(hs)

    async def aclose(self):
        pass


def _run_tasks(synth, prior, value, smc, tasks, seed=3, limit=5):
    async def go():
        sem = asyncio.Semaphore(limit)
        return await asyncio.gather(*(
            run_task(suite=synth["suite"], prior=prior, value=value, task_id=t, smc=smc,
                     seed=seed, semaphore=sem) for t in tasks))
    return asyncio.run(go())


def test_results_do_not_depend_on_completion_order(synth):
    smc = SMCConfig(n_particles=16, max_steps=3, beta=BETA, resample="ess", ess_threshold=0.9)
    tasks = [str(i) for i in range(6)]
    base = _run_tasks(synth, synth["prior"], synth["exact"], smc, tasks)
    assert any(s.resampled for r in base for s in r.steps)
    for jitter_seed in (1, 2):
        jittery = _run_tasks(synth, JitteryPrior(synth["prior"], jitter_seed),
                             JitteryValue(synth["exact"], jitter_seed), smc, tasks)
        assert [_comparable(r) for r in jittery] == [_comparable(r) for r in base]


def test_different_seeds_give_different_runs(synth):
    smc = SMCConfig(n_particles=8, max_steps=3, beta=BETA, resample="fixed", resample_steps=(1,))
    a = _run_tasks(synth, synth["prior"], synth["exact"], smc, [TASK], seed=1)[0]
    b = _run_tasks(synth, synth["prior"], synth["exact"], smc, [TASK], seed=2)[0]
    assert _comparable(a) != _comparable(b)


def test_fork_never_changes_the_parent():
    env = SyntheticEnv(__import__("amc.envs.synthetic", fromlist=["x"]).SyntheticOptions())
    env.reset("3")
    env.step("a0")
    child = env.fork()
    before = env.node
    child.step("a1")
    assert env.node == before and child.node != before
    assert env.step("a2").info["node"] == (0, 2)


class CountingSuite:
    """The synthetic suite, counting forks and closes of its environments."""

    name = "synthetic"

    def __init__(self, inner):
        self.inner, self.forks, self.closes, self.made = inner, 0, 0, 0

    def make(self):
        self.made += 1
        return _CountingEnv(self.inner.make(), self)

    def task_ids(self, split):
        return self.inner.task_ids(split)

    def close(self):
        pass


class _CountingEnv:
    io_bound = False

    def __init__(self, env, suite):
        self.env, self.suite = env, suite

    def reset(self, t):
        return self.env.reset(t)

    def step(self, a):
        return self.env.step(a)

    def valid_actions(self):
        return self.env.valid_actions()

    def fork(self):
        self.suite.forks += 1
        return _CountingEnv(self.env.fork(), self.suite)

    def close(self):
        self.suite.closes += 1


def test_selected_k_times_keeps_env_once_and_forks_k_minus_1(synth):
    suite = CountingSuite(synth["suite"])
    smc = SMCConfig(n_particles=12, max_steps=3, beta=BETA, resample="fixed",
                    resample_steps=(1, 2), resample_terminated=True)
    res = asyncio.run(run_task(suite=suite, prior=synth["prior"], value=synth["exact"],
                               task_id=TASK, smc=smc, seed=0))
    expected_forks = 11  # initial population: reset once, fork N - 1 times
    for s in res.steps:
        if s.resampled:
            expected_forks += 12 - len(set(s.ancestors))
    assert suite.forks == expected_forks
    assert suite.closes == suite.forks + suite.made  # every environment closed exactly once


def test_best_of_n_never_resamples_nor_calls_the_value(synth):
    class Exploding:
        async def score(self, hs):
            raise AssertionError("Best-of-N must not call the value model")

        async def aclose(self):
            pass

    m = parse_method("bon@8", SMCConfig(max_steps=3, beta=BETA), synth and
                     __import__("amc.config", fromlist=["x"]).ValueConfig())
    res = asyncio.run(run_task(suite=synth["suite"], prior=synth["prior"], value=Exploding(),
                               task_id=TASK, smc=m.smc, seed=0))
    assert res.n_particles == 8 and not any(s.resampled for s in res.steps)
    assert len(res.population) == 8
    # importance weights of Best-of-N are exp(R / beta): the max-weight selection uses the
    # reward, so it is the oracle (why it is not the deployable selection)
    assert res.metrics["max_weight_reward"] == pytest.approx(res.metrics["oracle_best"])


def test_react_is_one_particle(synth):
    from amc.config import ValueConfig
    m = parse_method("react", SMCConfig(max_steps=3, beta=BETA), ValueConfig())
    res = asyncio.run(run_task(suite=synth["suite"], prior=synth["prior"], value=synth["zero"],
                               task_id=TASK, smc=m.smc, seed=0))
    assert res.n_particles == 1 and len(res.trajectories) == 1
    r = res.trajectories[0].total_reward
    assert res.metrics["oracle_best"] == res.metrics["max_weight_reward"] == r


def test_bad_method_specs():
    from amc.config import ValueConfig
    for spec, msg in [("react@3", "exactly one"), ("bon@0", ">= 1"), ("xyz", "KIND"),
                      ("bon+learned", "only smc"), ("smc+nope", "unknown value")]:
        with pytest.raises(ValueError, match=msg):
            parse_method(spec, SMCConfig(), ValueConfig())


def test_failed_prior_retires_the_particle_and_the_task_continues(synth):
    class FlakyPrior:
        async def propose(self, history, rng):
            if rng.random() < 0.3:
                return AgentTurn("", "", Usage(calls=1), error="HTTP 400: context too long")
            return await synth["prior"].propose(history, rng)

        async def aclose(self):
            pass

    smc = SMCConfig(n_particles=16, max_steps=3, beta=BETA, resample="fixed",
                    resample_steps=(1, 2))
    res = asyncio.run(run_task(suite=synth["suite"], prior=FlakyPrior(), value=synth["exact"],
                               task_id=TASK, smc=smc, seed=4))
    assert res.failures and all("context" in f["error"] for f in res.failures)
    assert any(t.failure for t in res.trajectories)
    assert res.usage.calls >= 16
    assert np.isfinite(res.metrics["weighted_mean_reward"])


def test_value_calls_are_billed_to_the_task(synth):
    class PaidValue:  # an LLM judge: every scored state costs one call
        def __init__(self):
            self.scored = 0

        async def score_with_usage(self, hs):
            self.scored += len(hs)
            return await synth["exact"].score(hs), Usage(prompt_tokens=100 * len(hs),
                                                         calls=len(hs))

        async def score(self, hs):
            return (await self.score_with_usage(hs))[0]

        async def aclose(self):
            pass

    smc = SMCConfig(n_particles=8, max_steps=3, beta=BETA, resample="fixed",
                    resample_steps=(1, 2))
    runs = {}
    for name, value in (("free", synth["exact"]), ("paid", PaidValue())):
        runs[name] = asyncio.run(run_task(suite=synth["suite"], prior=synth["prior"],
                                          value=value, task_id=TASK, smc=smc, seed=2))
    paid, free = runs["paid"], runs["free"]
    extra = value.scored
    assert extra > 0 and _comparable(paid)["metrics"] == _comparable(free)["metrics"]
    assert paid.usage.calls == free.usage.calls + extra
    assert paid.usage.prompt_tokens == free.usage.prompt_tokens + 100 * extra


def test_all_zero_weights_are_recorded_never_nan(synth):
    class Hopeless:  # finite, but (f - f_last) / beta overflows to -inf: every weight is zero
        async def score(self, hs):
            return [-1e308] * len(hs)

        async def aclose(self):
            pass

    smc = SMCConfig(n_particles=8, max_steps=3, beta=BETA, resample="fixed", resample_steps=(1,))
    res = asyncio.run(run_task(suite=synth["suite"], prior=synth["prior"], value=Hopeless(),
                               task_id=TASK, smc=smc, seed=0))
    assert any(s.degenerate for s in res.steps)
    d = res.to_dict()
    # the deployable scores are NaN by design here (no selection value); the rest never are
    weighted = {k: v for k, v in d["metrics"].items() if "deployable" not in k}
    assert len(weighted) >= 5 and "nan" not in str(weighted).lower()


@pytest.mark.parametrize("bad", [np.inf, -np.inf])
def test_infinite_value_is_a_clear_error_naming_model_and_state(synth, bad):
    class Overconfident:
        async def score(self, hs):
            return [0.5] * (len(hs) - 1) + [bad]

        async def aclose(self):
            pass

    smc = SMCConfig(n_particles=4, max_steps=3, beta=BETA, resample="fixed", resample_steps=(1,))
    shown = re.escape(f"{bad:+}")
    with pytest.raises(ValueError, match=r"Overconfident .*\(" + shown + r"\) for particle "
                       r"\d of task '18' after step 1"):
        asyncio.run(run_task(suite=synth["suite"], prior=synth["prior"], value=Overconfident(),
                             task_id=TASK, smc=smc, seed=0))


def test_nan_value_is_a_clear_error(synth):
    class Broken:
        async def score(self, hs):
            return [float("nan")] * len(hs)

        async def aclose(self):
            pass

    smc = SMCConfig(n_particles=4, max_steps=3, beta=BETA, resample="fixed", resample_steps=(1,))
    with pytest.raises(ValueError, match="NaN"):
        asyncio.run(run_task(suite=synth["suite"], prior=synth["prior"], value=Broken(),
                             task_id=TASK, smc=smc, seed=0))


def test_diagnostics_are_complete(synth):
    smc = SMCConfig(n_particles=8, max_steps=3, beta=BETA, resample="fixed", resample_steps=(1,))
    res = asyncio.run(run_task(suite=synth["suite"], prior=synth["prior"], value=synth["exact"],
                               task_id=TASK, smc=smc, seed=0))
    s1 = res.steps[0]
    assert s1.resampled and len(s1.ancestors) == 8 and len(s1.log_weights) == 8
    assert sum(v is not None for v in s1.values) == s1.n_live and 1 <= s1.ess <= 8
    assert all(v is None for v in res.steps[1].values)
    t = res.trajectories[0]
    assert t.steps[0].raw_text.startswith("Thought:") and t.steps[0].action.startswith("a")


def test_forced_final_action_applies_to_every_method(synth):
    """An env's final_action() (WebShop's forced buy) is stepped once for unfinished particles."""

    class ForcingEnv(_CountingEnv):
        def final_action(self):
            return "a0"

        def fork(self):
            return ForcingEnv(self.env.fork(), self.suite)

    class Forcing(CountingSuite):
        def make(self):
            return ForcingEnv(self.inner.make(), self)

    suite = Forcing(synth["suite"])
    for spec in ("react", "bon@4"):
        from amc.config import ValueConfig
        m = parse_method(spec, SMCConfig(max_steps=1, beta=BETA), ValueConfig())
        res = asyncio.run(run_task(suite=suite, prior=synth["prior"], value=synth["zero"],
                                   task_id=TASK, smc=m.smc, seed=0))
        for t in res.population:
            if not t.steps[0].done:
                assert len(t.steps) == 2 and t.steps[-1].info["forced"]
                assert t.steps[-1].action == "a0" and t.steps[-1].raw_text == ""


def test_the_pool_keeps_finished_trajectories_that_resampling_dropped(synth):
    """Finished particles resampled away stay in the pool (slot None) and count for the oracle."""
    class Optimist:  # live particles look far better than finished ones: those get dropped
        async def score(self, hs):
            return [3.0] * len(hs)

        async def aclose(self):
            pass

    smc = SMCConfig(n_particles=8, max_steps=3, beta=BETA, resample="fixed",
                    resample_steps=(1, 2), resample_terminated=True)
    decisive = 0
    for seed in range(20):
        res = asyncio.run(run_task(suite=synth["suite"], prior=synth["prior"],
                                   value=Optimist(), task_id=TASK, smc=smc, seed=seed))
        dropped = [t for t in res.trajectories if t.slot is None]
        assert all(t.done for t in dropped) and len(res.population) == 8
        assert {t.pid for t in dropped}.isdisjoint({t.pid for t in res.population})
        best = max(t.total_reward for t in res.trajectories)
        assert res.metrics["oracle_best"] == best
        decisive += bool(dropped) and best > max(t.total_reward for t in res.population)
    assert decisive > 0, "some run's best trajectory must have been dropped"


def test_fixed_resample_steps_past_the_last_step_are_rejected():
    from amc.config import ValueConfig
    from amc.smc.schedule import Schedule

    with pytest.raises(ValueError, match=r"resample_steps \[3, 5\] are not before max_steps = 3"):
        parse_method("smc@4", SMCConfig(max_steps=3, resample_steps=(1, 3, 5)), ValueConfig())
    ok = parse_method("smc@4", SMCConfig(max_steps=3, resample_steps=(1, 2)), ValueConfig())
    assert ok.smc.resample_steps == (1, 2)
    # react and bon never resample: their resample_steps are irrelevant, so not an error
    assert parse_method("bon@4", SMCConfig(max_steps=3), ValueConfig()).smc.resample == "never"
    assert parse_method("smc", SMCConfig(max_steps=3, resample="ess"), ValueConfig())
    with pytest.raises(ValueError, match=r"\[4\] are not before the last step 4"):
        Schedule("fixed", frozenset({2, 4}), max_steps=4)  # run_task called directly


def test_shipped_configs_still_resolve():
    from pathlib import Path

    from amc.config import load_run_config

    root = Path(__file__).resolve().parents[2]
    for path in sorted((root / "configs").glob("*.yaml")):
        cfg = load_run_config(path)
        assert [parse_method(m, cfg.smc, cfg.value, cfg.values) for m in cfg.methods], path
