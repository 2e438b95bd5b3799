"""The in-process transformers prior's next-token log-probabilities (bundled Gemma-3-270M)."""

import math
import os
from pathlib import Path

import pytest

from amc.priors.hf import HFOptions, HFPrior
from amc.registry import VALUES
from tests.priors.test_logprobs_embedded import FAR, NEAR

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def hf_prior():
    old = os.environ.get("AMC_CACHE")
    os.environ["AMC_CACHE"] = str(Path(__file__).resolve().parents[2] / ".cache")
    try:
        yield HFPrior(HFOptions(), env="textcraft")
    finally:
        if old is None:
            os.environ.pop("AMC_CACHE", None)
        else:
            os.environ["AMC_CACHE"] = old


async def test_candidates_are_the_most_likely_tokens_with_their_log_probabilities(hf_prior):
    top, usage = await hf_prior.next_token_logprobs("The capital of France is", top=5)
    assert 1 <= len(top) <= 5 and usage.calls == 1 and usage.prompt_tokens > 3
    assert "Paris" in {t.strip() for t in top}
    assert all(lp <= 0 for lp in top.values())
    assert math.log(sum(math.exp(lp) for lp in top.values())) <= 1e-6  # at most all the mass
    assert hf_prior.ledger.run.calls == 1


async def test_the_yesno_value_runs_in_process(hf_prior):
    value = VALUES.build("zero-shot-yesno", {}, env_name="textcraft", env_options=None,
                         beta=1.0, prior=hf_prior)
    (near, far), usage = await value.score_with_usage([NEAR, FAR])
    assert usage.calls == 2 and value.stats["undecided"] == 0
    assert 0.0 < near < 1.0 and 0.0 < far < 1.0 and near != far
