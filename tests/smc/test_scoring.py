"""The three task metrics over hand-built pools, and mean +- standard error."""

import math

import numpy as np
import pytest

from amc.smc.scoring import mean_and_se, select_max_weight, task_metrics, weighted_mean
from amc.smc.weights import DegenerateWeightsWarning


def test_oracle_is_the_best_of_the_whole_pool_not_only_the_population():
    # a finished trajectory that resampling dropped (reward 1.0) is still in the pool
    m = task_metrics(pool_rewards=[0.2, 0.5, 1.0], population_log_w=[0.0, 1.0],
                     population_rewards=[0.2, 0.5], success_threshold=1.0)
    assert m["oracle_best"] == 1.0 and m["success"] == 1.0
    assert m["selected_reward"] == 0.5 and m["success_selected"] == 0.0


def test_selection_takes_the_largest_weight_not_the_largest_reward():
    m = task_metrics([0.9, 0.1, 0.4], [-2.0, 3.0, 0.5], [0.9, 0.1, 0.4], 0.5)
    assert m["selected_reward"] == 0.1 and m["success_selected"] == 0.0
    assert select_max_weight([1.0, 1.0, 0.0]) == 0  # ties: the first


def test_weighted_mean_uses_the_normalised_weights():
    log_w = np.log([1.0, 3.0])  # W = (0.25, 0.75)
    m = task_metrics([0.0, 1.0], log_w, [0.0, 1.0], 1.0)
    assert m["weighted_mean_reward"] == pytest.approx(0.75)  # unweighted would be 0.5
    with pytest.warns(DegenerateWeightsWarning):  # all weights zero: uniform
        assert weighted_mean([-np.inf, -np.inf], [0.2, 0.6]) == pytest.approx(0.4)


def test_success_thresholds_are_inclusive():
    m = task_metrics([0.7], [0.0], [0.7], success_threshold=0.7)
    assert m["success"] == m["success_selected"] == 1.0


def test_an_empty_population_scores_nan_not_a_number_made_up():
    m = task_metrics([], [], [], 1.0)
    assert all(math.isnan(m[k]) for k in ("oracle_best", "selected_reward",
                                          "weighted_mean_reward"))
    assert m["success"] == m["success_selected"] == 0.0
    with pytest.raises(ValueError, match="differ in length"):
        task_metrics([1.0], [0.0, 0.0], [1.0], 1.0)


def test_mean_and_se_on_known_inputs():
    mean, se = mean_and_se([1.0, 2.0, 3.0, 6.0])
    assert mean == 3.0
    # sample sd = sqrt(((-2)^2 + (-1)^2 + 0 + 3^2) / 3) = sqrt(14 / 3); se = sd / sqrt(4)
    assert se == pytest.approx(math.sqrt(14 / 3) / 2)
    assert mean_and_se([5.0]) == (5.0, 0.0)
    assert all(math.isnan(x) for x in mean_and_se([]))
