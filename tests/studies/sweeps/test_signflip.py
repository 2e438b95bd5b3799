"""The local sign-flip test: exact enumeration, its Monte-Carlo fallback, task clustering."""

from __future__ import annotations

import numpy as np
import pytest

from studies.sweeps.signflip import paired_sign_flip, sign_flip_p, task_differences


def test_exact_p_counts_the_assignments_at_least_as_extreme() -> None:
    # d = (1, 1, 1): of the 8 sign assignments only +++ and --- reach |sum| = 3
    r = sign_flip_p([1.0, 1.0, 1.0])
    assert r.exact and r.tasks == 3 and r.p == pytest.approx(2 / 8)
    # d = (2, 1): |sums| are 3, 1, 1, 3 -> p = 1/2; a zero difference is a fair coin too
    assert sign_flip_p([2.0, 1.0]).p == pytest.approx(0.5)
    assert sign_flip_p([0.0, 0.0]).p == pytest.approx(1.0)
    assert sign_flip_p([1.0] * 10).p == pytest.approx(2 / 2 ** 10)


def test_above_the_exact_limit_a_seeded_monte_carlo_close_to_the_exact_value() -> None:
    x = np.random.default_rng(1).normal(0.3, 1.0, size=20)
    exact = sign_flip_p(x).p
    many = np.concatenate([x, x[:1] * 0])  # 21 tasks, one zero: the same null distribution
    mc = sign_flip_p(many, draws=200_000)
    assert not mc.exact and mc.tasks == 21
    assert mc.p == pytest.approx(exact, abs=0.01)
    assert sign_flip_p(many, draws=50_000).p == sign_flip_p(many, draws=50_000).p  # seeded
    floor = sign_flip_p([5.0] * 40, draws=1000)
    assert 0 < floor.p <= 2 / 1001 and str(floor) == "< 2e-03 (MC)"  # never 0: a bound
    assert str(mc).endswith(" (MC)") and str(sign_flip_p([1.0, 1.0])) == "0.5"


def test_rows_are_clustered_by_task_before_flipping() -> None:
    assert list(task_differences(["a", "b", "a"], [1.0, 4.0, 3.0])) == [2.0, 4.0]
    r = paired_sign_flip(["a", "a", "b"], a=[0.0, 0.0, 0.0], b=[1.0, 3.0, 1.0])
    assert r.tasks == 2 and r.p == pytest.approx(0.5)
    with pytest.raises(ValueError, match="task labels"):
        task_differences(["a"], [1.0, 2.0])
    with pytest.raises(ValueError, match="no tasks"):
        sign_flip_p([])
