"""Sibling metrics on a hand-checked example: within-group AUC per step, the within-group
spread of V = f + r and the weight ratio it gives at beta, the within-group log-loss."""

from __future__ import annotations

import math

import numpy as np
import pytest

from studies.value_options.sibling_metrics import sibling_metrics, within_spread


def test_within_spread_ignores_between_group_differences() -> None:
    v = np.array([0.0, 0.2, 10.0, 10.4, 99.0])
    groups = ["a", "a", "b", "b", "c"]  # c alone: no spread
    assert within_spread(v, groups) == pytest.approx((0.1 + 0.2) / 2)
    assert math.isnan(within_spread(v[-1:], ["c"]))


def test_sibling_metrics_by_step() -> None:
    # task t at step 2: four siblings, the two best-valued succeed; step 4: ranked backwards
    pred = np.array([0.3, 0.2, 0.1, 0.0, 0.0, 0.1, 0.5])
    so_far = np.zeros(7)
    success = np.array([1, 1, 0, 0, 1, 0, 0], bool)
    groups = [("t", 2)] * 4 + [("t", 4)] * 2 + [("u", 4)]
    m = sibling_metrics(pred, so_far, success, groups, steps=[2, 4], beta=0.1)
    assert m["auc_within_step2"] == 1.0 and m["auc_within_step4"] == 0.0
    assert m["auc_within"] == pytest.approx(4 / 5)  # 4 of the 5 mixed pairs right
    sd2 = float(np.std([0.3, 0.2, 0.1, 0.0]))
    assert m["spread_step2"] == pytest.approx(sd2)
    assert m["spread_over_beta_step2"] == pytest.approx(sd2 / 0.1)
    assert m["weight_ratio_step2"] == pytest.approx(math.exp(sd2 / 0.1))
    assert m["spread_step4"] == pytest.approx(0.05)  # u's lone state adds no group
    z = np.array([3.0, 2.0, 1.0, 0.0])
    want = -0.5 * ((3.0 - np.log(np.exp(z).sum())) + (2.0 - np.log(np.exp(z).sum())))
    assert m["log_loss_beta_step2"] == pytest.approx(want)
    assert m["log_loss_uniform_step2"] == pytest.approx(math.log(4))
    assert m["mixed_groups"] == 2.0
    fitted = sibling_metrics(pred, so_far, success, groups, [2], beta=0.1, temperature=1e9)
    assert fitted["log_loss_fitted_step2"] == pytest.approx(math.log(4))
    with pytest.raises(ValueError, match="beta"):
        sibling_metrics(pred, so_far, success, groups, [2], beta=0.0)
