"""The resampling temperature fit: it recovers the temperature that generated which sibling
succeeds, says "uniform" for a value that does not rank, and the log-loss it minimises is the
within-group softmax cross-entropy."""

from __future__ import annotations

import math

import numpy as np
import pytest

from amc.value.temperature import Groups, TemperatureConfig, fit_temperature, weight_ratio


def simulated(temperature: float, n_groups: int = 2000, size: int = 4, seed: int = 0
              ) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Values ~ N(0, 0.3); exactly one sibling per group succeeds, drawn from
    softmax(values / temperature)."""
    rng = np.random.default_rng(seed)
    v = rng.normal(0, 0.3, (n_groups, size))
    p = np.exp(v / temperature)
    p /= p.sum(1, keepdims=True)
    winner = np.array([rng.choice(size, p=row) for row in p])
    y = np.zeros((n_groups, size), bool)
    y[np.arange(n_groups), winner] = True
    return v.ravel(), y.ravel(), np.repeat(np.arange(n_groups), size).tolist()


@pytest.mark.parametrize("true_t", [0.05, 0.2, 1.0])
def test_fit_recovers_the_generating_temperature(true_t: float) -> None:
    v, y, g = simulated(true_t)
    fit = fit_temperature(v, y, g)
    assert fit.temperature == pytest.approx(true_t, rel=0.15)
    assert not fit.at_bound and fit.groups == 2000
    assert fit.log_loss < fit.uniform_log_loss == pytest.approx(math.log(4))
    # the fitted T is the minimum: either side is worse
    grp = Groups.of(v, y, g)
    assert grp.log_loss(fit.temperature) <= min(grp.log_loss(fit.temperature * 0.7),
                                                grp.log_loss(fit.temperature * 1.4))


def test_a_value_that_does_not_rank_is_fitted_uniform() -> None:
    v, y, g = simulated(0.2)
    cfg = TemperatureConfig(max_temperature=5)
    for useless in (-v, np.zeros_like(v)):  # ranks backwards; constant within every group
        fit = fit_temperature(useless, y, g, cfg)
        assert fit.at_bound and fit.temperature == pytest.approx(5.0, rel=1e-3)
        assert fit.log_loss >= fit.uniform_log_loss - 1e-12  # no better than uniform


def test_log_loss_by_hand_and_groups_without_both_outcomes_left_out() -> None:
    values = [0.2, 0.0, 0.0, 0.9, 0.1, 0.5]
    success = [True, False, True, False, False, True]
    groups = ["a", "a", "a", "b", "b", "c"]  # b: no success; c: one state -> both left out
    grp = Groups.of(values, success, groups)
    assert len(grp) == 1
    lse = math.log(math.exp(2.0) + 2.0)
    assert grp.log_loss(0.1) == pytest.approx(-0.5 * ((2.0 - lse) + (0.0 - lse)))
    assert grp.log_loss(math.inf) == pytest.approx(math.log(3))
    with pytest.raises(ValueError, match="no group"):
        fit_temperature([0.1, 0.2], [False, False], ["a", "a"])


def test_weight_ratio() -> None:
    assert weight_ratio(0.01, 0.1) == pytest.approx(math.exp(0.1))
    with pytest.raises(ValueError, match="below"):
        TemperatureConfig(min_temperature=2.0, max_temperature=1.0)
