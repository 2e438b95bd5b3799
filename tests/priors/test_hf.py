"""The transformers prior on CPU with the bundled Gemma-3-270M (converted once from GGUF)."""

import asyncio

import numpy as np
import pytest

from amc.envs.synthetic import SyntheticEnv, SyntheticOptions
from amc.priors.hf import HFOptions, HFPrior
from amc.types import History

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def hf_prior():
    import os
    from pathlib import Path

    old = os.environ.get("AMC_CACHE")
    os.environ["AMC_CACHE"] = str(Path(__file__).resolve().parents[2] / ".cache")
    try:
        yield HFPrior(HFOptions(max_new_tokens=8, batch_wait_ms=50, prompt="menu"),
                      env="synthetic")
    finally:
        if old is None:
            os.environ.pop("AMC_CACHE", None)
        else:
            os.environ["AMC_CACHE"] = old


def state() -> History:
    env = SyntheticEnv(SyntheticOptions())
    return History("3", env.reset("3"), valid_actions=tuple(env.valid_actions()))


async def test_concurrent_proposals_are_one_batch_and_reproducible(hf_prior):
    h = state()
    first = await asyncio.gather(*(hf_prior.propose(h, np.random.default_rng(i))
                                   for i in range(3)))
    assert hf_prior.batches[-1] == 3
    again = await asyncio.gather(*(hf_prior.propose(h, np.random.default_rng(i))
                                   for i in range(3)))
    assert [t.raw_text for t in first] == [t.raw_text for t in again]
    for t in first:
        assert t.error is None and t.usage.calls == 1 and 0 < t.usage.completion_tokens <= 8
        assert t.usage.prompt_tokens > 50 and t.usage.cost_usd == 0.0
    assert hf_prior.ledger.run.calls == 6
