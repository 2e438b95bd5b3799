"""The value-head ensemble (studies.sweeps.ensemble): p averaged, distinct seeds, the mean of the
members; on hand-built members (no encoder)."""

from __future__ import annotations

import numpy as np
import pytest

from studies.sweeps.ensemble import Ensemble, mean_p, member_seeds, train_members


def _logistic_member(seed: int):
    """A member whose weights depend on its seed (a seeded generator): p = sigmoid(x w)."""
    w = np.random.default_rng(seed).normal(size=3)
    return lambda x: 1.0 / (1.0 + np.exp(-(x @ w)))


def test_mean_p_averages_probabilities_not_logits() -> None:
    # p 0.99 and 0.5: mean of p 0.745; the sigmoid of the mean logit would be 0.909
    got = mean_p([np.array([0.99, 0.2]), np.array([0.5, 0.4])])
    assert got == pytest.approx([0.745, 0.3])
    logit = np.log(0.99 / 0.01) / 2
    assert abs(got[0] - 1 / (1 + np.exp(-logit))) > 0.1


def test_mean_p_rejects_non_probabilities_and_empty() -> None:
    with pytest.raises(ValueError):
        mean_p([np.array([2.3])])  # a logit, not a p
    with pytest.raises(ValueError):
        mean_p([])


def test_members_get_distinct_seeds_and_differ() -> None:
    seen: list[int] = []

    def fit(seed: int):
        seen.append(seed)
        return _logistic_member(seed)

    ens = train_members(fit, member_seeds(0, 5))
    assert seen == [0, 1, 2, 3, 4] and ens.seeds == seen and len(ens.seconds) == 5
    x = np.random.default_rng(9).normal(size=(40, 3))
    preds = ens.member_predictions(x)
    assert all(not np.allclose(preds[0], p) for p in preds[1:])  # not one seed five times
    with pytest.raises(ValueError):
        train_members(fit, [1, 1])
    with pytest.raises(ValueError):
        member_seeds(0, 0)


def test_prediction_is_the_mean_of_the_members() -> None:
    ens = train_members(_logistic_member, member_seeds(3, 4))
    x = np.random.default_rng(1).normal(size=(25, 3))
    by_hand = sum(_logistic_member(s)(x) for s in (3, 4, 5, 6)) / 4
    assert ens.predict(x) == pytest.approx(by_hand)
    one = Ensemble([_logistic_member(3)], [3], [0.0])
    assert one.predict(x) == pytest.approx(_logistic_member(3)(x))  # K = 1: the member itself
