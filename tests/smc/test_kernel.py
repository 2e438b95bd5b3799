"""The pure pieces of the step kernel: Delta log w, absorb, reweight, resample, reindex."""

import numpy as np
import pytest

from amc.smc.population import (
    Population,
    Resampled,
    absorb,
    eligible_ess_fraction,
    horizon,
    offspring_plan,
    reindex,
    resample,
    reweight,
)
from amc.smc.resampling import multinomial, systematic
from amc.smc.weights import LogWeights, log_weight_increment
from amc.types import AgentTurn, EnvStep, Usage


class Env:
    """A stand-in environment: only its identity matters to the pure functions."""

    io_bound = False

    def __init__(self, name):
        self.name = name


def pop_of(n=4):
    return Population.start("t", "obs0", [Env(i) for i in range(n)])


def turn(action="a0", calls=1, error=None):
    return AgentTurn(f"Action: {action}", action, Usage(calls=calls), error=error)


# ---------------------------------------------------------------- Delta log w


def test_increment_is_the_readme_equation():
    # (f(s_t) - f(s_t0) + sum r) / beta with distinct numbers so any swapped term shows
    assert log_weight_increment(0.7, 0.2, 0.5, 0.5) == pytest.approx((0.7 - 0.2 + 0.5) / 0.5)
    assert log_weight_increment(0.0, 0.2, 1.0, 2.0) == pytest.approx(0.4)  # terminal: f = 0
    assert log_weight_increment(0.3, 0.3, 0.0, 1.0) == 0.0  # nothing changed


def test_increments_telescope():
    """Evaluating f at every step or only at the last gives the same total (exactness of the
    fixed schedule)."""
    f = [0.0, 0.4, 0.1, 0.9]  # f(s_0) := 0, then f after steps 1..3
    r = [0.0, 0.2, 0.0, 0.3]
    every = sum(log_weight_increment(f[t], f[t - 1], r[t], 0.7) for t in range(1, 4))
    once = log_weight_increment(f[3], f[0], sum(r), 0.7)
    assert every == pytest.approx(once)


def test_increment_rejects_a_non_positive_beta():
    with pytest.raises(ValueError, match="beta"):
        log_weight_increment(0.0, 0.0, 1.0, 0.0)


# ---------------------------------------------------------------- absorb / reweight / horizon


def test_absorb_extends_finishes_and_retires_failures():
    pop = reweight(pop_of(3), [0, 1, 2], [0.4, 0.1, 0.2], beta=0.5)  # f_last = 0.4, 0.1, 0.2
    out = absorb(pop, [
        (0, turn("a0"), EnvStep("o0", 0.3, False)),
        (1, turn("a1"), EnvStep("o1", 0.6, True)),
        (2, turn(calls=2, error="HTTP 401"), None),
    ], t=2, beta=0.5)
    lw0 = pop.log_w.log_w
    assert out.histories[0].observation == "o0" and out.r_since[0] == 0.3 and not out.finished[0]
    assert out.log_w.log_w[0] == lw0[0]  # no value yet: weight unchanged
    # finished: closed with f(terminal) = 0, archived at that weight
    assert out.finished[1] and out.log_w.log_w[1] == pytest.approx(lw0[1] + (0.6 - 0.1) / 0.5)
    # failed: weight zero, archived as a failure, logged
    assert out.finished[2] and out.failures[2] == "HTTP 401" and np.isneginf(out.log_w.log_w[2])
    assert [(r.pid, r.failure) for r in out.archive] == [(2, "HTTP 401"), (1, None)]
    assert out.archive[1].final_log_weight == out.log_w.log_w[1]
    assert out.failure_log == ({"t": 2, "particle": 2, "error": "HTTP 401"},)
    assert out.usage.calls == 4
    assert pop.histories[0].t == 0, "the input population is never changed"


def test_reweight_uses_reward_since_the_last_evaluation():
    pop = absorb(pop_of(2), [(0, turn(), EnvStep("o", 0.5, False)),
                             (1, turn(), EnvStep("o", 0.0, False))], t=1, beta=1.0)
    pop = reweight(pop, [0, 1], [0.2, 0.3], beta=0.5)
    assert pop.log_w.log_w.tolist() == pytest.approx([(0.5 + 0.2) / 0.5, 0.3 / 0.5])
    assert pop.r_since == (0.0, 0.0) and pop.f_last == (0.2, 0.3)
    again = reweight(pop, [1], [0.1], beta=0.5)  # only slot 1 re-evaluated
    assert again.log_w.log_w.tolist() == pytest.approx([0.7 / 0.5, (0.3 + 0.1 - 0.3) / 0.5])
    with pytest.raises(ValueError, match="2 values for 1 particles"):
        reweight(pop, [0], [0.1, 0.2], beta=1.0)


def test_horizon_closes_only_unfinished_particles_with_f_zero():
    pop = reweight(pop_of(2), [0, 1], [0.4, 0.4], beta=1.0)
    pop = absorb(pop, [(0, turn(), EnvStep("o", 0.25, False)),
                       (1, turn(), EnvStep("end", 1.0, True))], t=1, beta=1.0)
    before = pop.log_w.log_w.copy()
    out = horizon(pop, beta=1.0)
    assert out.log_w.log_w[0] == pytest.approx(before[0] + 0.25 - 0.4)
    assert out.log_w.log_w[1] == before[1]


# ---------------------------------------------------------------- resample / reindex


def test_resample_keeps_ineligible_slots_and_preserves_mass():
    lw = LogWeights(np.log([0.1, 2.0, 0.3, 5.0]))
    elig = np.array([True, False, True, True])
    res = resample(lw, elig, multinomial, np.random.default_rng(0))
    assert res.ancestors[1] == 1 and set(res.ancestors[[0, 2, 3]]) <= {0, 2, 3}
    assert res.log_w.log_w[1] == lw.log_w[1]
    assert np.exp(res.log_w.log_w[[0, 2, 3]]) == pytest.approx([(0.1 + 0.3 + 5.0) / 3] * 3)
    assert res.log_w.log_mean() == pytest.approx(lw.log_mean())  # log Z unchanged
    assert not res.degenerate


def test_resample_draws_in_proportion_to_the_eligible_weights():
    lw = LogWeights(np.log([1.0, 3.0, 100.0, 0.0 + 1e-300]))
    elig = np.array([True, True, False, True])
    rng = np.random.default_rng(1)
    counts = np.zeros(4)
    for _ in range(2000):
        counts += np.bincount(resample(lw, elig, multinomial, rng).ancestors, minlength=4)
    assert counts[2] == 2000  # ineligible: always its own ancestor, never picked by others
    share = counts[[0, 1, 3]] / counts[[0, 1, 3]].sum()
    assert share == pytest.approx([0.25, 0.75, 0.0], abs=0.02)


def test_degenerate_eligible_weights_resample_uniformly_and_say_so():
    lw = LogWeights(np.array([-np.inf, -np.inf, 0.0]))
    res = resample(lw, np.array([True, True, False]), systematic, np.random.default_rng(0))
    assert res.degenerate and np.isneginf(res.log_w.log_w[:2]).all()
    assert res.ancestors[2] == 2
    with pytest.raises(ValueError, match="eligible"):
        resample(lw, np.zeros(3, dtype=bool), systematic, np.random.default_rng(0))


def test_eligible_ess_is_scaled_to_the_population():
    lw = LogWeights(np.log([1.0, 1.0, 1.0, 1000.0]))
    assert eligible_ess_fraction(lw, np.array([True, True, True, False])) == pytest.approx(4.0)
    assert lw.ess() < 1.1  # the whole population's ESS is not what decides


def test_failed_particles_are_never_eligible():
    pop = absorb(pop_of(3), [(0, turn(), EnvStep("o", 1.0, True)),
                             (1, turn(error="boom"), None),
                             (2, turn(), EnvStep("o", 0.0, False))], t=1, beta=1.0)
    assert pop.eligible(False).tolist() == [False, False, True]
    assert pop.eligible(True).tolist() == [True, False, True]


def test_offspring_plan_keeps_the_first_copy_and_forks_the_rest():
    assert offspring_plan([2, 2, 0, 2, 3]) == [(2, True), (2, False), (0, True), (2, False),
                                               (3, True)]


def test_reindex_copies_state_assigns_new_pids_and_drops_unselected_envs():
    pop = reweight(pop_of(4), [0, 1, 2, 3], [0.1, 0.2, 0.3, 0.4], beta=1.0)
    res = Resampled(np.array([1, 1, 3, 1]), LogWeights(np.zeros(4)), False)
    forks = [Env("f1"), Env("f2")]
    new, dropped = reindex(pop, res, forks)
    assert new.envs == (pop.envs[1], forks[0], pop.envs[3], forks[1])
    assert new.pids == (1, 4, 3, 5) and new.next_pid == 6
    assert new.f_last == (0.2, 0.2, 0.4, 0.2) and new.lineages == ((1,), (1,), (3,), (1,))
    assert dropped == [pop.envs[0], pop.envs[2]]
    assert new.log_w is res.log_w
