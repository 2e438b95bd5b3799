"""The prior's HTTP client (transport.JsonClient): SDK error types, messages and proxies."""

import openai
import pytest

from amc.priors.transport import JsonClient, env_proxy, is_retryable, retry_after_s, status_error
from tests.priors.loopback import Faults, LoopbackServer

URL = "http://127.0.0.1:9/v1/chat/completions"


@pytest.mark.parametrize(("status", "cls", "retried"), [
    (400, openai.BadRequestError, False), (401, openai.AuthenticationError, False),
    (404, openai.NotFoundError, False), (409, openai.ConflictError, True),
    (429, openai.RateLimitError, True), (503, openai.InternalServerError, True),
    (418, openai.APIStatusError, False)])
def test_status_answers_become_the_sdk_errors(status, cls, retried):
    err = status_error(URL, status, [("retry-after", "2")],
                       b'{"error": {"message": "nope", "code": 1}}')
    assert type(err) is cls and err.status_code == status
    assert err.message == f"Error code: {status} - nope" and err.body == {"message": "nope",
                                                                            "code": 1}
    assert is_retryable(err) is retried and retry_after_s(err) == 2.0


def test_a_non_json_error_body_keeps_the_bare_code():
    err = status_error(URL, 502, [], b"<html>bad gateway</html>")
    assert isinstance(err, openai.InternalServerError) and err.message == "Error code: 502"
    assert err.body == "<html>bad gateway</html>"


def test_proxy_comes_from_the_environment_once(monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "internal.example")
    assert env_proxy("https://api.openai.com/v1") == "http://proxy.example:3128"
    assert env_proxy("https://internal.example/v1") is None
    assert env_proxy("http://api.openai.com/v1") is None  # no HTTP_PROXY set


async def test_posts_json_and_raises_sdk_errors_over_http():
    with LoopbackServer(require_key="sk-good") as srv:
        good = JsonClient(srv.url, "sk-good", timeout_s=5, connections=2)
        body = {"model": "toy", "messages": [{"role": "user", "content": "hi"}], "seed": 1}
        answer = await good.post("/chat/completions", body)
        assert answer["choices"][0]["message"]["content"].endswith("look around")
        bad = JsonClient(srv.url, "sk-bad", timeout_s=5, connections=2)
        with pytest.raises(openai.AuthenticationError, match="Incorrect API key"):
            await bad.post("/chat/completions", body)
        await good.close()
        await bad.close()
    with LoopbackServer(faults=Faults(rate_stall=1.0, stall_s=2.0)) as srv:
        slow = JsonClient(srv.url, "k", timeout_s=0.2, connections=1)
        with pytest.raises(openai.APITimeoutError):
            await slow.post("/chat/completions", body)
        await slow.close()
    dead = JsonClient("http://127.0.0.1:9/v1", "k", timeout_s=2, connections=1)
    with pytest.raises(openai.APIConnectionError) as info:
        await dead.post("/chat/completions", body)
    assert is_retryable(info.value)
    await dead.close()
