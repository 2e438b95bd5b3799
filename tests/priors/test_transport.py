import asyncio
import json

import httpx
import numpy as np
import openai
import pytest

from amc.priors.transport import (
    Limiter,
    MalformedResponse,
    PermanentError,
    RetryPolicy,
    call_with_retries,
    redact,
    retry_after_s,
)


def status_error(cls, code: int, headers: dict[str, str] | None = None):
    req = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")
    resp = httpx.Response(code, headers=headers or {}, request=req)
    return cls("boom", response=resp, body=None)


async def test_retry_after_is_honoured_and_backoff_is_seeded():
    errors = [status_error(openai.RateLimitError, 429, {"retry-after": "0.05"}),
              status_error(openai.InternalServerError, 503),
              openai.APITimeoutError(httpx.Request("POST", "http://127.0.0.1/"))]
    waits: list[float] = []

    async def flaky():
        if errors:
            raise errors.pop(0)
        return "ok"

    policy = RetryPolicy(max_retries=5, base_delay_s=0.01)
    out, retries = await call_with_retries(flaky, policy, np.random.default_rng(1),
                                           on_retry=lambda e, w: waits.append(w))
    assert (out, retries) == ("ok", 3) and waits[0] == 0.05
    expect = np.random.default_rng(1)
    assert waits[1:] == [expect.uniform(0, 0.02), expect.uniform(0, 0.04)]


async def test_permanent_errors_and_giving_up():
    async def unauthorized():
        raise status_error(openai.AuthenticationError, 401)

    with pytest.raises(PermanentError, match=r"^authentication failed \(401\)"):
        await call_with_retries(unauthorized, RetryPolicy(), np.random.default_rng(0))

    async def always_500():
        raise status_error(openai.InternalServerError, 500)

    with pytest.raises(PermanentError, match="gave up after 2 retries"):
        await call_with_retries(always_500, RetryPolicy(max_retries=2, base_delay_s=0.001),
                                np.random.default_rng(0))


def test_retry_after_forms_and_redaction():
    ms = status_error(openai.RateLimitError, 429, {"retry-after-ms": "250"})
    assert retry_after_s(ms) == 0.25
    assert retry_after_s(status_error(openai.RateLimitError, 429, {"retry-after": "3"})) == 3.0
    assert retry_after_s(status_error(openai.RateLimitError, 429)) is None
    assert redact("key sk-abc123XYZ and Bearer tok", "tok") == "key *** and ***"


async def test_token_bucket_paces_calls():
    lim = Limiter(max_in_flight=10, tokens_per_minute=6000)  # 100 tokens/s, bucket starts full

    async def noop():
        return None

    t0 = asyncio.get_running_loop().time()
    # 3 x 2010 = 6030 tokens: 30 more than the full bucket, i.e. 0.3 s at 100 tokens/s
    await asyncio.gather(*(lim.run(2010, noop) for _ in range(3)))
    assert 0.25 <= asyncio.get_running_loop().time() - t0 < 2


async def test_malformed_200_answers_are_retried_then_given_up_on():
    """A body cut short (not JSON) or without a completion is transient, not permanent."""
    bad = [json.JSONDecodeError("Unterminated string", '{"id": "to', 7),
           MalformedResponse("no choices in the answer")]

    async def flaky():
        if bad:
            raise bad.pop(0)
        return "ok"

    policy = RetryPolicy(max_retries=3, base_delay_s=0.001)
    assert await call_with_retries(flaky, policy, np.random.default_rng(0)) == ("ok", 2)

    async def always_cut():
        raise json.JSONDecodeError("Expecting value", "{", 1)

    with pytest.raises(PermanentError, match=r"gave up after 2 retries: malformed response"):
        await call_with_retries(always_cut, RetryPolicy(max_retries=2, base_delay_s=0.001),
                                np.random.default_rng(0))
