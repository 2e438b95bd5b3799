"""The rollout value with the embedded prior itself (llama.cpp Gemma): its calls are counted."""

import pytest

from amc.envs.synthetic import SyntheticOptions, SyntheticSuite
from amc.priors.embedded import EmbeddedOptions, EmbeddedPrior
from amc.registry import VALUES
from amc.types import History


@pytest.mark.slow
async def test_the_rollout_value_runs_the_embedded_prior_and_counts_its_calls(embedded_server):
    prior = EmbeddedPrior(EmbeddedOptions(base_url=embedded_server.url, cache=False),
                          env="synthetic")
    value = VALUES.build("rollout", {"max_steps": 2, "n_rollouts": 2}, env_name="synthetic",
                         env_options=SyntheticOptions(), beta=1.0, prior=prior)
    root = History("0", SyntheticSuite(SyntheticOptions()).make().reset("0"))
    (v,), usage = await value.score_with_usage([root])
    assert 2 <= usage.calls <= 4 and usage.calls == prior.ledger.run.calls
    assert usage.prompt_tokens > 0 and v == v  # a number (NaN would fail)
    await value.aclose()
    await prior.aclose()
