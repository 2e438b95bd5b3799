import pytest
import torch

from amc.priors.hf import HFOptions, HFPrior


def filtered(logits, **kw):
    p = HFPrior.__new__(HFPrior)  # the filter needs only the options, not a model
    p.options = HFOptions(**kw)
    return p._filtered_probs(torch.tensor(logits))


def test_top_k_then_top_p_per_row():
    probs = filtered([[5.0, 4.0, 3.0, 0.0, -1.0], [0.0, 0.0, 0.0, 0.0, 10.0]], top_k=3, top_p=0.9)
    e = torch.exp(torch.tensor([5.0, 4.0, 3.0]))
    top3 = e / e.sum()  # 0.665, 0.245, 0.090: the third falls outside the 0.9 nucleus
    assert probs[0].tolist() == pytest.approx([*top3[:2].tolist(), 0, 0, 0], abs=1e-6)
    assert probs[1].argmax() == 4 and probs[1, :4].sum() == 0


def test_no_truncation_keeps_the_softmax():
    probs = filtered([[1.0, 2.0, 3.0]], top_k=0, top_p=1.0)
    assert probs[0].tolist() == pytest.approx(torch.softmax(torch.tensor([1.0, 2, 3]), 0).tolist())


def test_nucleus_of_the_top_k_equals_the_nucleus_of_the_sorted_vocabulary():
    """The filter sorts only what top-k kept; the reference sorts the whole vocabulary."""
    logits = torch.randn(4, 1000, generator=torch.Generator().manual_seed(0)) * 3
    for k, p in [(50, 0.9), (5, 0.99), (0, 0.8)]:
        masked = logits.masked_fill(logits < torch.topk(logits, k).values[:, -1:], -torch.inf) \
            if k else logits
        sp, si = torch.sort(torch.softmax(masked, -1), descending=True)
        want = torch.zeros(4, 1000).scatter(1, si, sp.masked_fill(sp.cumsum(-1) - sp > p, 0))
        got = filtered(logits, top_k=k, top_p=p)
        assert torch.equal(got > 0, want > 0) and torch.allclose(got, want)
