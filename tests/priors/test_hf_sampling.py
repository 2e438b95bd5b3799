import pytest
import torch

from amc.priors.hf import truncated


def dense(logits, k, p):
    """``truncated``'s kept probabilities scattered back over the vocabulary, normalised."""
    x = torch.tensor(logits)
    probs, ids = truncated(x, k, p)
    full = torch.zeros_like(x).scatter(1, ids, probs)
    return full / full.sum(-1, keepdim=True)


def test_top_k_then_top_p_per_row():
    probs = dense([[5.0, 4.0, 3.0, 0.0, -1.0], [0.0, 0.0, 0.0, 0.0, 10.0]], 3, 0.9)
    e = torch.exp(torch.tensor([5.0, 4.0, 3.0]))
    top3 = e / e.sum()  # 0.665, 0.245, 0.090: the third falls outside the 0.9 nucleus
    kept = top3[:2] / top3[:2].sum()
    assert probs[0].tolist() == pytest.approx([*kept.tolist(), 0, 0, 0], abs=1e-6)
    assert probs[1].argmax() == 4 and probs[1, :4].sum() == 0


def test_no_truncation_keeps_the_softmax():
    probs, ids = truncated(torch.tensor([[1.0, 2.0, 3.0]]), 0, 1.0)
    assert ids.tolist() == [[0, 1, 2]]
    assert probs[0].tolist() == pytest.approx(torch.softmax(torch.tensor([1.0, 2, 3]), 0).tolist())


def test_the_kept_tokens_are_the_nucleus_of_the_top_k_of_the_sorted_vocabulary():
    """Reference: mask all but the k largest logits over the whole vocabulary, sort it, keep
    the smallest prefix with mass >= p. ``truncated`` sorts and returns only k tokens: the
    same tokens with the same probabilities (a draw index maps back through its ids)."""
    logits = torch.randn(4, 1000, generator=torch.Generator().manual_seed(0)) * 3
    for k, p in [(50, 0.9), (5, 0.99), (0, 0.8), (40, 1.0)]:
        masked = logits.masked_fill(logits < torch.topk(logits, k).values[:, -1:], -torch.inf) \
            if k else logits
        sp, si = torch.sort(torch.softmax(masked, -1), descending=True)
        want = torch.zeros(4, 1000).scatter(1, si, sp.masked_fill(sp.cumsum(-1) - sp > p, 0))
        probs, ids = truncated(logits, k, p)
        assert probs.shape[1] == (k or 1000)
        got = torch.zeros(4, 1000).scatter(1, ids, probs)
        assert torch.equal(got > 0, want > 0) and torch.allclose(got, want)
        assert torch.all(probs[:, :-1] >= probs[:, 1:])  # by descending probability
