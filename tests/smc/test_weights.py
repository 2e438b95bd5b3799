"""LogWeights: log-space normalisation, ESS, log-mean, degenerate and invalid inputs."""

import warnings

import numpy as np
import pytest

from amc.smc.weights import DegenerateWeightsWarning, LogWeights, logsumexp


def test_normalised_matches_direct_computation():
    lw = LogWeights(np.array([0.0, -1.0, 2.0, 0.5]))
    w = np.exp([0.0, -1.0, 2.0, 0.5])
    np.testing.assert_allclose(lw.normalised(), w / w.sum())
    np.testing.assert_allclose(lw.ess(), 1 / np.sum((w / w.sum()) ** 2))
    np.testing.assert_allclose(lw.log_mean(), np.log(w.mean()))


def test_huge_log_weights_do_not_overflow():
    lw = LogWeights(np.array([1000.0, 1000.0, 999.0]))
    w = lw.normalised()
    assert np.all(np.isfinite(w))
    np.testing.assert_allclose(w.sum(), 1.0)
    np.testing.assert_allclose(lw.log_mean(), 1000 + np.log((2 + np.exp(-1)) / 3))


def test_add_is_immutable_and_keeps_zero_weights_zero():
    lw = LogWeights(np.array([0.0, -np.inf]))
    lw2 = lw.add([1.0, np.inf])  # -inf + inf must stay -inf, not NaN
    assert lw.log_w.tolist() == [0.0, -np.inf]
    assert lw2.log_w[0] == 1.0 and np.isneginf(lw2.log_w[1])
    with pytest.raises(ValueError):
        lw.log_w[0] = 3.0  # read-only view


def test_all_minus_inf_gives_uniform_and_a_warning_never_nan():
    lw = LogWeights(np.full(4, -np.inf))
    assert lw.degenerate
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        w = lw.normalised()
    assert any(issubclass(c.category, DegenerateWeightsWarning) for c in caught)
    np.testing.assert_allclose(w, 0.25)
    assert lw.ess() == 4.0
    assert np.isneginf(lw.log_mean())


def test_some_minus_inf_weights_get_zero_mass():
    w = LogWeights(np.array([-np.inf, 0.0, -np.inf])).normalised()
    np.testing.assert_allclose(w, [0, 1, 0])
    assert LogWeights(np.array([-np.inf, 0.0])).ess() == pytest.approx(1.0)


def test_nan_is_rejected_with_positions():
    with pytest.raises(ValueError, match=r"\[1\]"):
        LogWeights(np.array([0.0, np.nan]))
    with pytest.raises(ValueError):
        LogWeights.uniform(2).add([np.nan, 0.0])
    with pytest.raises(ValueError):
        LogWeights(np.array([]))
    with pytest.raises(ValueError):
        LogWeights.uniform(0)


def test_positive_infinity_takes_all_the_mass():
    w = LogWeights(np.array([0.0, np.inf, np.inf])).normalised()
    np.testing.assert_allclose(w, [0, 0.5, 0.5])


def test_ess_bounds():
    rng = np.random.default_rng(0)
    for _ in range(100):
        n = int(rng.integers(1, 50))
        ess = LogWeights(rng.normal(0, 3, n)).ess()
        assert 1.0 - 1e-9 <= ess <= n + 1e-9
    assert LogWeights.uniform(7).ess() == pytest.approx(7)


def test_logsumexp_edge_cases():
    assert np.isneginf(logsumexp(np.array([])))
    assert np.isneginf(logsumexp(np.array([-np.inf, -np.inf])))
    assert logsumexp(np.array([np.inf, 0.0])) == np.inf
    assert logsumexp(np.array([0.0, 0.0])) == pytest.approx(np.log(2))
