"""Resampling schemes: unbiased offspring counts over many seeds, and degenerate inputs."""

import numpy as np
import pytest

from amc.registry import UnknownNameError
from amc.smc.resampling import RESAMPLERS, get_resampler, offspring_counts

SCHEMES = sorted(RESAMPLERS)


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("n", [10, 37])
def test_expected_offspring_counts_equal_n_times_weights(scheme, n):
    """E[N_i] = n W_i. Over R seeds the mean count's s.d. is at most sqrt(n W_i (1 - W_i) / R)
    (the multinomial variance, the largest of the four schemes); we allow 5 s.d. (+ a tiny
    floor), a bound a biased scheme (e.g. one that ignores a particle) violates by far."""
    W = np.random.default_rng(123).dirichlet(np.full(10, 0.5))
    R = 3000
    f = get_resampler(scheme)
    total = np.zeros(10)
    for seed in range(R):
        a = f(W, n, np.random.default_rng(seed))
        assert a.shape == (n,) and a.min() >= 0 and a.max() < 10
        assert np.all(np.diff(a) >= 0), "ancestors are sorted"
        total += offspring_counts(a, 10)
    mean = total / R
    sd = np.sqrt(n * W * (1 - W) / R)
    assert np.all(np.abs(mean - n * W) <= 5 * sd + 1e-3), (mean, n * W)


@pytest.mark.parametrize("scheme", ["systematic", "stratified", "residual"])
def test_low_variance_schemes_beat_multinomial(scheme):
    W = np.random.default_rng(5).dirichlet(np.ones(8))
    def var(name):
        c = np.array([offspring_counts(get_resampler(name)(W, 8, np.random.default_rng(s)), 8)
                      for s in range(2000)])
        return c.var(axis=0).sum()
    assert var(scheme) < var("multinomial")


@pytest.mark.parametrize("scheme", SCHEMES)
def test_degenerate_inputs(scheme):
    f = get_resampler(scheme)
    rng = np.random.default_rng(0)
    assert f(np.array([1.0]), 5, rng).tolist() == [0] * 5  # one particle
    one_hot = np.array([0.0, 0.0, 1.0, 0.0])
    assert f(one_hot, 4, rng).tolist() == [2] * 4  # all mass on one
    for s in range(200):  # zero-weight particles are never picked
        a = f(np.array([0.5, 0.0, 0.5, 0.0]), 6, np.random.default_rng(s))
        assert set(a.tolist()) <= {0, 2}
    assert f(np.array([0.2, 0.8]), 1, rng).shape == (1,)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_invalid_inputs_raise(scheme):
    f = get_resampler(scheme)
    rng = np.random.default_rng(0)
    for bad in ([], [0.0, 0.0], [0.5, -0.1], [np.nan, 1.0], [np.inf, 1.0]):
        with pytest.raises(ValueError):
            f(np.array(bad, dtype=float), 3, rng)
    with pytest.raises(ValueError):
        f(np.array([1.0]), 0, rng)


def test_same_seed_same_ancestors_and_registry_errors():
    W = np.array([0.1, 0.2, 0.7])
    for name in SCHEMES:
        f = get_resampler(name)
        a1 = f(W, 9, np.random.default_rng(7))
        a2 = f(W, 9, np.random.default_rng(7))
        assert a1.tolist() == a2.tolist()
    with pytest.raises(UnknownNameError, match="known: multinomial"):
        get_resampler("bogus")


def test_float_roundoff_never_indexes_past_the_end():
    W = np.full(3, 1 / 3)  # cumsum may be 0.9999999999999999
    for name in SCHEMES:
        for s in range(500):
            assert get_resampler(name)(W, 3, np.random.default_rng(s)).max() <= 2


def test_config_names_exactly_the_registered_resamplers() -> None:
    from amc.config import RESAMPLER_NAMES
    from amc.smc.resampling import RESAMPLERS

    assert sorted(RESAMPLER_NAMES) == sorted(RESAMPLERS)
