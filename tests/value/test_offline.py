"""Offline figures on hand-built held-out states: the low end, not only the ranking.

Two values with the same within-(task, step) ranking differ only in how they score doomed
states: the figures must tell them apart where the AUC cannot.
"""

from __future__ import annotations

import numpy as np
import pytest

from amc.value.offline import doomed_weight, offline_figures, predictiveness


def states():
    groups = [("t", s) for s in range(4) for _ in range(3)]
    success = np.array([1, 0, 0] * 4, bool)
    doomed = np.array([0, 0, 1] * 4, bool)  # the third state of each group cannot succeed
    sharp = np.array([0.6, 0.2, 0.0] * 4)  # the ceiling: doomed exactly 0
    soft = np.array([0.6, 0.2, 0.1] * 4)  # same ranking, doomed scored low but not 0
    return groups, success, doomed, sharp, soft


def test_same_ranking_different_low_end():
    groups, success, doomed, sharp, soft = states()
    a = offline_figures(sharp, success, groups, doomed)
    b = offline_figures(soft, success, groups, doomed)
    assert a["auc_within"] == b["auc_within"] == 1.0
    assert a["doomed_mean"] == 0.0 and b["doomed_mean"] == pytest.approx(0.1)
    assert a["doomed_weight"] == 0.0 and b["doomed_weight"] == pytest.approx(0.1 / 0.4)
    assert b["log_loss"] > a["log_loss"]
    # below 0.2: sharp holds only the doomed zeros (mean 0), soft the 0.1s (mean 0.1, rate 0)
    assert a["small_p_mean"] == 0.0 and b["small_p_ratio"] == float("inf")


def test_doomed_weight_is_per_group_and_a_succeeding_doomed_state_is_refused():
    p = np.array([0.5, 0.1, 0.2, 0.2])
    d = np.array([False, True, False, True])
    assert doomed_weight(p, d, ["a", "a", "b", "b"]) == pytest.approx((0.2 + 1.0) / 2)
    with pytest.raises(ValueError, match="mask is wrong"):
        offline_figures(p, [1, 1, 0, 0], ["a", "a", "b", "b"], d)
    with pytest.raises(ValueError, match="one non-zero length"):
        offline_figures(p, [1, 0], ["a"] * 4)


def test_predictiveness_ranks_figures_by_their_spearman_with_the_gain():
    gain = {"v1": 0.02, "v2": 0.10, "v3": 0.18, "v4": 0.20}
    figs = {  # doomed weight falls as the gain rises; AUC does not move with it
        "v1": {"auc_within": 0.74, "doomed_weight": 0.5, "log_loss": 0.5},
        "v2": {"auc_within": 0.73, "doomed_weight": 0.3, "log_loss": 0.45},
        "v3": {"auc_within": 0.75, "doomed_weight": 0.1, "log_loss": 0.46},
        "v4": {"auc_within": 0.72, "doomed_weight": 0.0, "log_loss": 0.4},
    }
    r = predictiveness(figs, gain)
    assert r["doomed_weight"] == pytest.approx(1.0)
    assert r["auc_within"] < 0.5 and r["log_loss"] == pytest.approx(0.8)
    assert np.isnan(r["small_p_ratio"])  # not measured for any variant


def test_spearman_exact_p_is_the_share_of_permutations_at_least_as_extreme():
    from amc.value.offline import spearman_exact

    rho, p = spearman_exact([0.1, 0.2, 0.3], [1.0, 2.0, 3.0])
    assert rho == pytest.approx(1.0) and p == pytest.approx(2 / 6)  # +1 and -1 of 3! orders
    rho, p = spearman_exact([1, 2, 3, 4, 5], [2, 1, 3, 4, 5])
    assert rho == pytest.approx(0.9)
    # rho = 1 - sum(d^2) / 20 >= 0.9 over 5! orders: identity and the 4 adjacent swaps;
    # rho <= -0.9: their mirrors
    assert p == pytest.approx(2 * 5 / 120)
    assert np.isnan(spearman_exact([1, 2], [1, 2])[0])
    assert np.isnan(spearman_exact([1, 1, 1], [1, 2, 3])[0])  # a constant figure
    rho, p = spearman_exact(np.arange(10.0), np.arange(10.0))  # seeded Monte Carlo beyond 8
    assert rho == pytest.approx(1.0) and 0 < p < 0.01


def test_figures_read_back_from_strict_json_as_computed():
    """Issue 63: strict JSON writes a non-finite figure null; small_p_ratio's null is +inf
    where the low states never succeed but are scored above 0, NaN where nothing is low."""
    import json
    import math

    from amc.results import dumps
    from amc.value.offline import figures_from_json

    groups, success, _, _, soft = states()
    lost = offline_figures(soft, np.zeros(12, bool), groups)  # low states, none succeeds
    none_low = offline_figures(np.full(12, 0.9), success, groups)  # no state below SMALL
    assert lost["small_p_ratio"] == math.inf and math.isnan(none_low["small_p_ratio"])
    for figs in (lost, none_low):
        back = figures_from_json(json.loads(dumps(figs)))
        assert list(back) == list(figs)
        assert all(back[k] == v or (math.isnan(back[k]) and math.isnan(v))
                   for k, v in figs.items())
