"""The python server's completions do not depend on the requests served before them."""

from __future__ import annotations

import httpx
import pytest

from amc.priors.llama_app import canonical_prefix
from amc.priors.prompts import completion_prompt
from amc.types import History, Step
from tests.priors.toycraft import OBSERVATION0, ToyCraftEnv


def test_only_whole_blocks_evaluated_from_position_zero_are_reused() -> None:
    cached, prompt = list(range(20)), [*range(18), 99, 98]
    assert canonical_prefix(cached, 20, prompt, block=4) == 16  # the shared 18, cut to blocks
    assert canonical_prefix(cached, 8, prompt, block=4) == 8  # the earlier prompt's blocks only
    assert canonical_prefix(cached, 20, cached, block=4) == 16  # the same prompt: one token left
    assert canonical_prefix(cached, 20, cached[:16], block=4) == 12  # ... also at a block's end
    assert canonical_prefix([7, *cached], 20, prompt, block=4) == 0  # nothing shared
    assert canonical_prefix(cached, 20, prompt, block=32) == 0  # no whole block


def prompts() -> list[str]:
    """Menu prompts of one episode, each a prefix-sharing extension of the one before."""
    env = ToyCraftEnv()
    hs = [History("t", OBSERVATION0, valid_actions=tuple(env.valid_actions()))]
    for a in ("get 1 oak log", "inventory", "get 1 ink sac"):
        step = Step("", a, env.step(a).observation, 0.0, False)
        hs.append(hs[-1].extend(step).with_valid_actions(env.valid_actions()))
    return [completion_prompt(h, "textcraft", "menu") for h in hs]


@pytest.mark.slow
def test_a_request_gets_the_same_logits_whatever_was_served_before(embedded_server) -> None:
    """The same prompt and seed after itself (plain llama-cpp-python re-evaluates its last
    token alone: measured to change the sample), after a shorter prompt sharing its start and
    after a longer one: the same completion and bitwise the same top log-probabilities."""
    if embedded_server.backend != "python":
        pytest.skip("llama-server (cpp) batches slots together: not bitwise reproducible")
    ps = prompts()

    def complete(prompt: str) -> tuple[str, dict[str, float]]:
        body = {"prompt": prompt, "max_tokens": 4, "temperature": 1.0, "seed": 5,
                "stop": ["\n"], "logprobs": 5}
        choice = httpx.post(f"{embedded_server.url}/completions", json=body,
                            timeout=600).json()["choices"][0]
        return choice["text"], choice["logprobs"]["top_logprobs"][0]

    first = complete(ps[2])
    assert complete(ps[2]) == first  # right after itself
    complete(ps[0])
    assert complete(ps[2]) == first  # after a shorter prompt it extends
    complete(ps[3])
    assert complete(ps[2]) == first  # after a longer one that extends it
