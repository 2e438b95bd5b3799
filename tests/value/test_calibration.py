"""Calibration fitted on held-out states: monotone maps that fix a known miscalibration.

Hand-built data: outcomes drawn with true probability p_true, predictions a distorted p_true
(too high at the low end, as the regression head's doomed-state scores are); every fitted map
must be non-decreasing, lower the log-loss, and pull the low end down.
"""

from __future__ import annotations

import numpy as np
import pytest

from amc.value.calibration import Calibration, fit, log_loss, pav


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    p_true = rng.uniform(0, 1, 4000) ** 2  # many near 0
    y = (rng.uniform(size=p_true.size) < p_true).astype(float)
    pred = 0.1 + 0.6 * np.sqrt(p_true)  # doomed states scored ~0.1, not 0
    return pred, y, p_true


def test_pav_is_the_non_decreasing_least_squares_fit():
    assert pav(np.array([1.0, 0.0, 2.0]), np.ones(3)).tolist() == [0.5, 0.5, 2.0]
    assert pav(np.array([3.0, 1.0, 2.0]), np.array([1.0, 1.0, 2.0])).tolist() == [2.0] * 3
    assert pav(np.array([0.0, 1.0]), np.ones(2)).tolist() == [0.0, 1.0]


@pytest.mark.parametrize("method", ["platt", "isotonic", "power"])
def test_fitted_maps_are_monotone_and_lower_the_log_loss(data, method):
    pred, y, _ = data
    cal = fit(method, pred[:3000], y[:3000])
    grid = np.linspace(0, 1, 501)
    assert np.all(np.diff(cal(grid)) >= -1e-12)  # monotone: within-task ranking is kept
    held_p, held_y = pred[3000:], y[3000:]
    assert log_loss(cal(held_p), held_y) < log_loss(held_p, held_y) - 0.01
    assert cal(np.array([0.1]))[0] < 0.06  # the doomed end pulled towards 0
    again = Calibration.from_dict(cal.to_dict())
    assert np.allclose(again(grid), cal(grid))


def test_isotonic_recovers_a_step_and_platt_a_known_temperature():
    rng = np.random.default_rng(1)
    z = rng.normal(0, 2, 20000)
    y = (rng.uniform(size=z.size) < 1 / (1 + np.exp(-z))).astype(float)
    pred = 1 / (1 + np.exp(-z / 3))  # logits shrunk 3x: a temperature of 1/3
    cal = fit("platt", pred, y)
    assert cal.params["a"] == pytest.approx(3.0, rel=0.1)
    assert abs(cal.params["b"]) < 0.1
    p = np.repeat([0.2, 0.4, 0.6], 100)
    yy = np.concatenate([np.zeros(100), np.zeros(100), np.ones(100)])
    iso = fit("isotonic", p, yy)
    assert iso(np.array([0.2, 0.4, 0.6, 0.5])).tolist() == pytest.approx([0, 0, 1, 0.5])


def test_none_is_the_identity_and_bad_input_is_refused():
    assert fit("none", [0.2], [1]) == Calibration()
    assert Calibration()(np.array([0.3, 1.2])).tolist() == [0.3, 1.0]
    with pytest.raises(ValueError, match="equal"):
        fit("platt", [0.1, 0.2], [1])
