"""The GPU benchmark's decoders at toy size on the CPU: a step decoded as one batch, with the
shared prompt prefix computed once and repeated through the KV cache, gives what N separate
decodes give (a tiny random Gemma-3 whose sliding window is shorter than the prefix)."""

import pytest
import torch

from benchmarks.bench_priors_gpu import DECODERS, common_prefix_len, step

V = 97


def gemma(window: int):
    from transformers import AutoModelForCausalLM, Gemma3TextConfig

    cfg = Gemma3TextConfig(vocab_size=V, hidden_size=64, intermediate_size=128,
                           num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
                           head_dim=32, sliding_window=window,
                           layer_types=["sliding_attention", "full_attention"])
    torch.manual_seed(0)
    return AutoModelForCausalLM.from_config(cfg).eval()


@pytest.fixture(scope="module")
def tiny():
    """The window (64) holds prefix + longest suffix + new tokens (20 + 7 + 6)."""
    return gemma(64)


def rows() -> list[list[int]]:
    g = torch.Generator().manual_seed(1)
    prefix = torch.randint(3, V, (20,), generator=g).tolist()
    tails = [torch.randint(3, V, (k,), generator=g).tolist() for k in (1, 5, 3, 7)]
    return [prefix + t for t in tails]


def kw(**extra):
    return dict(max_new=6, stop=torch.zeros(V, dtype=torch.bool), pad_id=0, **extra)


def test_common_prefix_len():
    assert common_prefix_len([[1, 2, 3], [1, 2, 4], [1, 2]]) == 2
    assert common_prefix_len([[5, 1], [6, 1]]) == 0
    assert common_prefix_len([[1, 2], [1, 2]]) == 2


def test_greedy_steps_agree_across_decoders(tiny):
    rs = rows()
    outs = {how: step(tiny, rs, [0] * len(rs), how, **kw(temperature=0)) for how in DECODERS}
    assert outs["shared"][1] == 20  # the prefix was computed once
    assert outs["batched"][1] == 0 == outs["sequential"][1]
    assert outs["shared"][0] == outs["sequential"][0] == outs["batched"][0]
    assert all(len(o) == 6 for o in outs["shared"][0])
    # Not trivially equal: the rows' continuations differ from one another.
    assert len({tuple(o) for o in outs["shared"][0]}) > 1


def test_a_window_shorter_than_the_step_shares_nothing_and_stays_exact():
    """Pads between prefix and suffix would push real tokens out of an 8-token window."""
    small = gemma(8)
    rs = rows()
    shared = step(small, rs, [0] * 4, "shared", **kw(temperature=0))
    assert shared[1] == 0
    assert shared[0] == step(small, rs, [0] * 4, "sequential", **kw(temperature=0))[0]


def test_each_row_samples_from_its_own_seed(tiny):
    rs = rows()
    twice = [rs[1], rs[2], rs[1]]
    out, _ = step(tiny, twice, [7, 8, 7], "shared", **kw())
    assert out[0] == out[2]  # same prompt, same seed: same sample whatever its batch position
    alone, _ = step(tiny, [rs[1]], [7], "sequential", **kw())
    assert alone[0] == out[0]
    other, _ = step(tiny, twice, [7, 8, 9], "shared", **kw())
    assert other[2] != out[2]  # a different seed draws a different sample


def test_stop_tokens_end_a_row(tiny):
    rs = rows()
    first, _ = step(tiny, rs, [0] * 4, "shared", **kw(temperature=0))
    # A row and a position k >= 1 whose token did not occur before it in that row.
    r, k = next((r, k) for r, o in enumerate(first) for k in range(1, len(o))
                if o[k] not in o[:k])
    stop = torch.zeros(V, dtype=torch.bool)
    stop[first[r][k]] = True
    out, _ = step(tiny, rs, [0] * 4, "shared", max_new=6, stop=stop, pad_id=0, temperature=0)
    assert out[r] == first[r][:k + 1]  # the stop token is kept, nothing after it
