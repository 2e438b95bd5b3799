"""The room estimator against a two-state problem whose perfect resampler is known exactly."""

from __future__ import annotations

import math

import numpy as np
import pytest

from amc.types import History, Step
from amc.value.room import Rollout, perfect_resampler, rollouts_from_histories, task_room

P_GOOD, P_BAD, HORIZON = 0.9, 0.1, 3


def two_state(rng: np.random.Generator, n_rollouts: int, n: int) -> list[Rollout]:
    """Step 1 leads to state A or B (1/2 each); from A the task succeeds at step 3 with
    P_GOOD, from B with P_BAD; a failure ends the episode at step 3 too."""
    out = []
    for i in range(n_rollouts):
        good = rng.random() < 0.5
        win = rng.random() < (P_GOOD if good else P_BAD)
        keys = (("s0", 0), ("A" if good else "B", 1), ("x", 2), ("end", 3))
        out.append(Rollout(i // n, keys, 3 if win else None))
    return out


def exact_perfect(n: int) -> float:
    """beta -> 0 conditions on success: with k members in A, a particle is redrawn from A with
    probability k P_GOOD / (k P_GOOD + (n - k) P_BAD); averaged over k ~ Binomial(n, 1/2)."""
    total = 0.0
    for k in range(n + 1):
        q = (k * P_GOOD * (1 - P_GOOD) + (n - k) * P_BAD * (1 - P_BAD)) / (
            k * P_GOOD + (n - k) * P_BAD)
        total += math.comb(n, k) * 0.5 ** n * (1 - q ** n)
    return total


@pytest.mark.parametrize("n", [2, 4])
def test_perfect_resampler_matches_the_exact_two_state_answer(n: int) -> None:
    rollouts = two_state(np.random.default_rng(n), 1600, n)
    rooms = task_room(rollouts, n=n, horizon=HORIZON, step=1, beta=0.01)
    perfect = np.mean([g.perfect for g in rooms])
    bon = np.mean([g.best_of_n for g in rooms])
    model = np.mean([g.best_of_n_model for g in rooms])
    se = 1 / math.sqrt(len(rooms))
    assert perfect == pytest.approx(exact_perfect(n), abs=3 * se)
    assert bon == pytest.approx(1 - (1 - 0.5) ** n, abs=4 * se)  # any success: p = 0.5 each
    room = exact_perfect(n) - (1 - 0.5 ** n)  # a value that knows A from B has room here
    assert perfect - bon == pytest.approx(room, abs=3 * se)
    assert model == pytest.approx(bon, abs=3 * se)
    assert np.mean([g.room for g in rooms]) == pytest.approx(room, abs=3 * se)


def test_large_beta_is_uniform_resampling_and_ties_give_no_room() -> None:
    p = np.array([0.9, 0.1, 0.1, 0.1])
    uniform = 1 - (1 - p.mean()) ** 4
    assert perfect_resampler(p, 1e6) == pytest.approx(uniform, rel=1e-4)
    assert perfect_resampler(p, 0.01) == pytest.approx(1 - 0.3 ** 4, rel=1e-3)  # w ~ p
    assert perfect_resampler(np.array([0.0, 1.0]), 0.1) == 1.0
    # Every state the same: the perfect resampler is Best-of-N in expectation.
    rollouts = [Rollout(i // 4, (("s", 0), ("same", 1), ("end", 2)), 2 if i % 2 else None)
                for i in range(400)]
    rooms = task_room(rollouts, n=4, horizon=2, step=1, beta=0.1)
    assert np.mean([g.perfect for g in rooms]) == pytest.approx(1 - 0.5 ** 4, abs=0.02)


def test_own_outcomes_are_left_out_and_finished_members_count() -> None:
    # Two groups of two with unique states: a member's own outcome must not leak into its p.
    keys = [(("s", 0), (f"k{i}", 1), ("e", 2)) for i in range(4)]
    rollouts = [Rollout(0, keys[0], 2), Rollout(0, keys[1], None),
                Rollout(1, keys[2], None), Rollout(1, keys[3], None)]
    rooms = {g.group: g for g in task_room(rollouts, n=2, horizon=2, step=1, beta=0.1)}
    # Group 0's states are unseen outside: both get the outside running rate (0 of 2).
    assert rooms[0].perfect == 0.0 and rooms[0].best_of_n == 1.0
    # A member that already succeeded by the resampling step makes the group succeed; one
    # whose episode ended without success has no chance.
    early = [Rollout(0, (("s", 0), ("w", 1)), 1), Rollout(0, (("s", 0), ("l", 1)), None),
             Rollout(1, (("s", 0), ("l", 1), ("z", 2)), None),
             Rollout(1, (("s", 0), ("q", 1), ("z", 2)), 2)]
    got = {g.group: g.perfect for g in task_room(early, n=2, horizon=2, step=1, beta=0.1)}
    assert got[0] == 1.0
    with pytest.raises(ValueError, match="resampling step"):
        task_room(early, n=2, horizon=2, step=2, beta=0.1)


def test_rollouts_from_histories_keys_and_success_step() -> None:
    steps = (Step("", "a", "o1", 0.0, False), Step("", "b", "o2", 1.0, True))
    h = History("t", "o0", steps)
    (r,) = rollouts_from_histories([h], [0], key=lambda x: x.observation)
    assert r.keys == (("o0", 0), ("o1", 1), ("o2", 2)) and r.success_at == 2
    assert r.succeeded(2) and not r.succeeded(1) and not r.running_after(2)
