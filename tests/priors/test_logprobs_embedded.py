"""Next-token log-probabilities from the real embedded model (llama.cpp), and the yes/no value."""

import math

import pytest

from amc.priors.openai import OpenAIOptions, OpenAIPrior
from amc.registry import VALUES
from amc.types import History, Step
from tests.priors.toycraft import OBSERVATION0

NEAR = History("toy-1", OBSERVATION0, (
    Step("get 1 oak log", "get 1 oak log", "Got 1 oak log", 0.0, False),
    Step("craft 4 oak planks using 1 oak log", "craft 4 oak planks using 1 oak log",
         "Crafted 4 minecraft:oak_planks", 0.0, False)))
FAR = History("toy-1", OBSERVATION0, (
    Step("get 1 ink sac", "get 1 ink sac", "Got 1 ink sac", 0.0, False),))


@pytest.mark.slow
async def test_the_embedded_model_returns_candidates_and_the_value_tells_states_apart(
        embedded_server):
    prior = OpenAIPrior(OpenAIOptions(base_url=embedded_server.url, model="gemma-3-270m",
                                      endpoint="completions", cache=False), env="textcraft")
    top, usage = await prior.next_token_logprobs("Is the sky blue? Answer Yes or No.\nAnswer:",
                                                  top=10)
    assert 1 <= len(top) <= 11 and usage.calls == 1 and usage.prompt_tokens > 0
    assert all(lp <= 0 and math.isfinite(lp) for lp in top.values())
    value = VALUES.build("zero-shot-yesno", {}, env_name="textcraft", env_options=None,
                         beta=1.0, prior=prior)
    near, far = await value.score([NEAR, FAR])
    assert value.stats["undecided"] == 0 and value.stats["call_errors"] == 0
    assert 0.0 < near < 1.0 and 0.0 < far < 1.0 and near != far  # not a constant
    await prior.aclose()
