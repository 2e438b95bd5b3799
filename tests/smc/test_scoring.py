"""The task metrics over hand-built pools, the reward-free selection state."""

import math

import numpy as np
import pytest

from amc.smc.scoring import (
    select_by_value,
    select_max_weight,
    selection_history,
    task_metrics,
    upgrade_metric_keys,
    weighted_mean,
)
from amc.smc.weights import DegenerateWeightsWarning
from amc.types import History, Step


def test_oracle_is_the_best_of_the_whole_pool_not_only_the_population():
    # a finished trajectory that resampling dropped (reward 1.0) is still in the pool
    m = task_metrics(pool_rewards=[0.2, 0.5, 1.0], population_log_w=[0.0, 1.0],
                     population_rewards=[0.2, 0.5], success_threshold=1.0)
    assert m["oracle_best"] == 1.0 and m["success"] == 1.0
    assert m["max_weight_reward"] == 0.5 and m["success_max_weight"] == 0.0


def test_selection_takes_the_largest_weight_not_the_largest_reward():
    m = task_metrics([0.9, 0.1, 0.4], [-2.0, 3.0, 0.5], [0.9, 0.1, 0.4], 0.5)
    assert m["max_weight_reward"] == 0.1 and m["success_max_weight"] == 0.0
    assert select_max_weight([1.0, 1.0, 0.0]) == 0  # ties: the first


def test_weighted_mean_uses_the_normalised_weights():
    log_w = np.log([1.0, 3.0])  # W = (0.25, 0.75)
    m = task_metrics([0.0, 1.0], log_w, [0.0, 1.0], 1.0)
    assert m["weighted_mean_reward"] == pytest.approx(0.75)  # unweighted would be 0.5
    with pytest.warns(DegenerateWeightsWarning):  # all weights zero: uniform
        assert weighted_mean([-np.inf, -np.inf], [0.2, 0.6]) == pytest.approx(0.4)


def test_success_thresholds_are_inclusive():
    m = task_metrics([0.7], [0.0], [0.7], success_threshold=0.7)
    assert m["success"] == m["success_max_weight"] == 1.0


def test_an_empty_population_scores_nan_not_a_number_made_up():
    m = task_metrics([], [], [], 1.0)
    assert all(math.isnan(m[k]) for k in ("oracle_best", "max_weight_reward",
                                          "weighted_mean_reward"))
    assert m["success"] == m["success_max_weight"] == 0.0
    with pytest.raises(ValueError, match="differ in length"):
        task_metrics([1.0], [0.0, 0.0], [1.0], 1.0)


def test_deployable_takes_the_pool_trajectory_the_value_ranks_highest_not_the_best_reward():
    # pool = population (2) + a finished trajectory resampling dropped (last); the value
    # prefers the dropped one, whose reward is neither the best nor the max-weight one's
    m = task_metrics(pool_rewards=[1.0, 0.2, 0.6], population_log_w=[0.0, 5.0],
                     population_rewards=[1.0, 0.2], success_threshold=0.5,
                     pool_values=[0.1, 0.3, 0.9])
    assert m["deployable_reward"] == 0.6 and m["success_deployable"] == 1.0
    assert m["oracle_best"] == 1.0 and m["max_weight_reward"] == 0.2
    low = task_metrics([1.0, 0.2], [0.0, 0.0], [1.0, 0.2], 0.5, pool_values=[0.0, 0.4])
    assert low["deployable_reward"] == 0.2 and low["success_deployable"] == 0.0
    assert select_by_value([0.5, 0.5, 0.1]) == 0  # ties: the first in pool order


def test_without_a_selection_value_the_deployable_scores_are_nan_not_the_oracle():
    m = task_metrics([1.0, 0.0], [0.0, 0.0], [1.0, 0.0], 1.0)
    assert math.isnan(m["deployable_reward"]) and math.isnan(m["success_deployable"])
    with pytest.raises(ValueError, match="differ in length"):
        task_metrics([1.0, 0.0], [0.0, 0.0], [1.0, 0.0], 1.0, pool_values=[0.3])


def _step(action, reward, done):
    info = {"won": reward > 0, "score": 100 * reward, "reward_info": {"r": reward}, "node": [1]}
    return Step(raw_text=action, action=action, observation=f"after {action}", reward=reward,
                done=done, info=info)


def test_selection_history_is_the_last_pre_terminal_state_with_rewards_masked():
    done = History("t", "start", (_step("a", 0.5, False), _step("b", 1.0, True)))
    h = selection_history(done)
    assert [s.action for s in h.steps] == ["a"]  # the terminal step is dropped (V = 0 there)
    assert h.total_reward == 0.0 and all(s.info == {"node": [1]} for s in h.steps)
    assert h.observation == "after a"
    live = History("t", "start", (_step("a", 0.5, False), _step("c", 0.25, False)))
    h = selection_history(live)
    assert [s.action for s in h.steps] == ["a", "c"] and h.total_reward == 0.0
    assert selection_history(History("t", "start")).steps == ()


def test_old_metric_names_read_as_new_ones():
    old = {"selected_reward": 0.4, "selected_reward_se": 0.1, "success_selected": 1.0,
           "oracle_best": 1.0}
    assert upgrade_metric_keys(old) == {"max_weight_reward": 0.4, "max_weight_reward_se": 0.1,
                                        "success_max_weight": 1.0, "oracle_best": 1.0}
    both = upgrade_metric_keys({"selected_reward": 0.4, "max_weight_reward": 0.7})
    assert both == {"max_weight_reward": 0.7}
