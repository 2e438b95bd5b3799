"""LLM-prompted values (zero-shot, FoA) call the run's prior through `complete()`."""

import numpy as np
import pytest

from amc.priors.openai import OpenAIOptions, OpenAIPrior
from amc.registry import VALUES
from amc.types import History, Step
from tests.priors.toycraft import OBSERVATION0

H = History("toy-1", OBSERVATION0, (Step("Action: get 1 oak log", "get 1 oak log",
                                          "Got 1 oak log", 0.0, False),))


async def test_zero_shot_value_goes_through_the_prior_client(clean_server):
    prior = OpenAIPrior(OpenAIOptions(base_url=clean_server.url, model="toy", cache=False),
                        env="textcraft")
    value = VALUES.build("zero-shot", {}, env_name="textcraft", env_options=None, beta=1.0,
                         prior=prior)
    scores = await value.score([H, H])
    # the toy model answers "look around": no number, so the documented fallback (mid-range)
    assert scores == [0.5, 0.5] and value.parse_failures == 2
    assert prior.ledger.run.calls >= 2
    text, usage = await prior.complete("Score:")
    assert "look around" in text and usage.calls == 1
    await prior.aclose()


async def test_a_failed_value_call_falls_back_instead_of_aborting():
    prior = OpenAIPrior(OpenAIOptions(base_url="http://127.0.0.1:9/v1", model="toy", cache=False,
                                      max_retries=0, timeout_s=1.0), env="textcraft")
    with pytest.raises(RuntimeError):
        await prior.complete("Score:")
    value = VALUES.build("foa", {"fallback": 0.25}, env_name="textcraft", env_options=None,
                         beta=1.0, prior=prior)
    with pytest.warns(UserWarning, match="fallback"):
        assert await value.score([H]) == [0.25]
    await prior.aclose()


@pytest.mark.slow
async def test_zero_shot_with_the_embedded_model_gives_numbers_in_range(embedded_server):
    prior = OpenAIPrior(OpenAIOptions(base_url=embedded_server.url, model="gemma-3-270m",
                                      endpoint="completions", cache=False), env="textcraft")
    value = VALUES.build("zero-shot", {}, env_name="textcraft", env_options=None, beta=1.0,
                         prior=prior)
    scores = await value.score([H])
    assert all(0.0 <= s <= 1.0 and np.isfinite(s) for s in scores)
    await prior.aclose()
