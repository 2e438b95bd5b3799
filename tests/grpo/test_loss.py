"""GRPO advantages and loss: the maths a wrong sign, a missing mask or a dropped clip breaks."""

import numpy as np
import pytest
import torch

from amc.grpo.loss import group_advantages, grpo_loss


def test_advantages_are_relative_to_the_group_and_scaled_by_its_spread() -> None:
    r = np.array([[1.0, 0.0, 0.0, 1.0], [0.5, 0.5, 0.5, 0.5], [3.0, 1.0, 2.0, 2.0]])
    a = group_advantages(r)
    np.testing.assert_allclose(a[0], [1, -1, -1, 1], atol=1e-5)
    np.testing.assert_allclose(a[1], 0.0)  # no spread, no signal
    np.testing.assert_allclose(a[2], np.array([1, -1, 0, 0]) / np.std([3, 1, 2, 2]), atol=1e-5)
    np.testing.assert_allclose(group_advantages(r, scale=False)[2], [1, -1, 0, 0])


@pytest.mark.parametrize("shape", [(4,), (3, 1)])
def test_advantages_refuse_groups_of_one_or_flat_input(shape: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match="G >= 2"):
        group_advantages(np.zeros(shape))


def _batch() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    logp = torch.log(torch.tensor([[0.5, 0.4, 0.9], [0.2, 0.3, 0.7]]))
    mask = torch.tensor([[1, 1, 0], [1, 1, 1]])
    adv = torch.tensor([1.0, -1.0])
    return logp, mask, adv


def test_on_policy_gradient_raises_good_turns_and_lowers_bad_ones_and_ignores_padding() -> None:
    old, mask, adv = _batch()
    logp = old.clone().requires_grad_(True)
    parts = grpo_loss(logp, old, old, adv, mask, beta=0.1)
    # ratio 1, KL 0: loss = mean over turns of -A = 0; gradient -A / tokens-in-turn.
    assert float(parts.loss.detach()) == pytest.approx(0.0, abs=1e-7)
    assert parts.kl == pytest.approx(0.0)
    parts.loss.backward()
    assert logp.grad is not None
    np.testing.assert_allclose(logp.grad.numpy(),
                               [[-0.25, -0.25, 0.0], [1 / 6, 1 / 6, 1 / 6]], atol=1e-6)


def test_kl_to_the_reference_is_positive_and_pulls_back_towards_it() -> None:
    old, mask, adv = _batch()
    ref = old - 0.3
    logp = old.clone().requires_grad_(True)
    parts = grpo_loss(logp, old, ref, torch.zeros(2), mask, beta=1.0)
    d = -0.3
    assert parts.kl == pytest.approx(np.exp(d) - d - 1, rel=1e-5)
    parts.loss.backward()
    assert logp.grad is not None
    assert bool((logp.grad[mask.bool()] > 0).all())  # minimising lowers logp towards ref
    assert float(grpo_loss(old, old, ref, adv, mask, beta=0.0).loss) == pytest.approx(0.0)


def test_ratio_clip_stops_the_gradient_once_a_good_turn_moved_far_enough() -> None:
    old, mask, adv = _batch()
    logp = (old + torch.tensor([[0.5, 0.0, 0.0], [0.0, 0.0, 0.0]])).requires_grad_(True)
    parts = grpo_loss(logp, old, None, adv, mask, beta=0.0, clip_eps=0.2)
    parts.loss.backward()
    assert logp.grad is not None
    assert float(logp.grad[0, 0]) == 0.0  # ratio e^0.5 > 1.2 with A > 0: clipped
    assert float(logp.grad[0, 1]) < 0.0
    assert parts.clip_fraction == pytest.approx(1 / 5)


def test_bad_input_is_refused_in_one_line() -> None:
    old, mask, adv = _batch()
    with pytest.raises(ValueError, match="reference"):
        grpo_loss(old, old, None, adv, mask, beta=0.1)
    with pytest.raises(ValueError, match="differ"):
        grpo_loss(old[:, :2], old, old, adv, mask)
