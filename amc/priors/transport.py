"""Admission and retries for model calls: a global limiter and the ONE retry layer.

- :class:`Limiter` admits a call when a request slot is free (``max_in_flight``) and, if a
  tokens-per-minute budget is set, when the token bucket holds the call's estimated tokens
  (prompt characters / 4 + ``max_tokens``; providers admit on a similar estimate). One limiter
  serves every particle and task of a run, so the number of tasks in flight is what actually
  throttles (Little's law: in-flight calls = rate x latency).
- :func:`call_with_retries` retries 429, 408/409, 5xx, timeouts, connection errors and
  malformed 200 answers (a body cut short so it is not JSON, no choices, null content: what a
  proxy or an overloaded server sends, and what the next attempt usually fixes) with
  exponential backoff and full jitter, or waits exactly what ``Retry-After`` asks: the
  project's one retry loop (:mod:`amc.retry`, also the AgentGym client's), given the OpenAI
  SDK's errors to classify. The HTTP client never retries by itself, so there is exactly one
  layer. Jitter is
  drawn from a generator the caller seeds (from the request's seed), never from global
  randomness, and never from the particle's generator: a fault therefore cannot change which
  actions are sampled later.
- Everything else (400 bad request, context overflow, 401/403, 404, 422) is permanent:
  :class:`PermanentError` carries a one-line reason, with any API key redacted.
- :class:`JsonClient` is the one HTTP client of a prior: a keep-alive pool (aiohttp) that posts
  a plain JSON body and returns the decoded answer. A call's client CPU is what limits one event
  loop driving hundreds of particles, so it skips what the OpenAI SDK does per call (request
  options models, httpx/httpcore's pool scan, response wrappers; measured side by side in
  docs/benchmarks.md, section priors-client). Its failures are raised as the SDK's exception types
  (status errors with the SDK's message and the answer's headers, timeouts, connection errors),
  so the classification above serves it (and any SDK-based client) unchanged.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import re
import time
import urllib.parse
import urllib.request
from collections.abc import Awaitable, Callable
from typing import TypeVar

import aiohttp
import httpx2  # the OpenAI SDK's httpx: its exceptions carry these request/response types
import numpy as np
import openai

from amc.retry import RetriesExhausted, RetryPolicy, retry_async

__all__ = ["JsonClient", "Limiter", "MalformedResponse", "PermanentError", "RetryPolicy",
           "call_with_retries", "describe", "env_proxy", "is_retryable", "redact",
           "retry_after_s", "status_error"]

T = TypeVar("T")


class PermanentError(Exception):
    """A call that must not be retried; ``str()`` is the one-line reason."""


class MalformedResponse(Exception):
    """A 200 answer without a usable completion (no choices, null content); retried."""


class Limiter:
    """Global admission control: in-flight slots plus an optional tokens-per-minute bucket."""

    def __init__(self, max_in_flight: int, tokens_per_minute: int | None = None) -> None:
        self.max_in_flight = max_in_flight
        self.tpm = tokens_per_minute
        self._slots = asyncio.Semaphore(max_in_flight)
        self._tokens = float(tokens_per_minute or 0)
        self._stamp = time.monotonic()
        self._bucket_lock = asyncio.Lock()
        self.in_flight = 0
        self.peak_in_flight = 0
        self.wait_s = 0.0
        """Total seconds calls spent waiting for admission."""

    async def _take_tokens(self, n: int) -> None:
        if not self.tpm:
            return
        n = min(n, self.tpm)  # a call bigger than the bucket waits for a full bucket
        async with self._bucket_lock:  # FIFO: one waiter refills at a time
            while True:
                now = time.monotonic()
                self._tokens = min(self.tpm, self._tokens + (now - self._stamp) * self.tpm / 60)
                self._stamp = now
                if self._tokens >= n:
                    self._tokens -= n
                    return
                await asyncio.sleep((n - self._tokens) * 60 / self.tpm)

    async def run(self, tokens: int, fn: Callable[[], Awaitable[T]]) -> T:
        """Run ``fn`` once admitted."""
        t0 = time.monotonic()
        await self._take_tokens(tokens)
        async with self._slots:
            self.wait_s += time.monotonic() - t0
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
            try:
                return await fn()
            finally:
                self.in_flight -= 1


_STATUS_ERRORS: dict[int, type[openai.APIStatusError]] = {
    400: openai.BadRequestError, 401: openai.AuthenticationError,
    403: openai.PermissionDeniedError, 404: openai.NotFoundError, 409: openai.ConflictError,
    422: openai.UnprocessableEntityError, 429: openai.RateLimitError,
}


def status_error(url: str, status: int, headers: list[tuple[str, str]],
                 raw: bytes) -> openai.APIStatusError:
    """The SDK's exception (and message) for an HTTP error answer."""
    response = httpx2.Response(status, headers=headers, content=raw,
                              request=httpx2.Request("POST", url))
    msg, body = f"Error code: {status}", None
    try:
        body = json.loads(raw)
    except ValueError:
        body = raw.decode("utf-8", "replace").strip() or None
    data = body.get("error", body) if isinstance(body, dict) else body
    message = data.get("message") if isinstance(data, dict) else None
    if isinstance(message, str) and message:
        msg += f" - {message}"
    cls = _STATUS_ERRORS.get(status) or (
        openai.InternalServerError if status >= 500 else openai.APIStatusError)
    return cls(msg, response=response, body=data)


def env_proxy(url: str) -> str | None:
    """The proxy the environment names for ``url`` ($HTTPS_PROXY, $HTTP_PROXY, $NO_PROXY)."""
    parts = urllib.parse.urlsplit(url)
    if not parts.hostname or urllib.request.proxy_bypass(parts.hostname):
        return None
    return urllib.request.getproxies().get(parts.scheme)


class JsonClient:
    """One keep-alive connection pool posting JSON to ``base_url`` (see the module docstring).

    Build it inside the event loop that uses it; ``connections`` caps the open connections
    (the limiter's ``max_in_flight``, so every admitted call has one).
    """

    def __init__(self, base_url: str, key: str, timeout_s: float, connections: int) -> None:
        self.base_url = base_url.rstrip("/")
        headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json",
                   "Accept": "application/json"}
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=connections),
            timeout=aiohttp.ClientTimeout(total=timeout_s), headers=headers,
        )
        self.proxy = env_proxy(self.base_url)
        """$HTTP(S)_PROXY for this endpoint (honoured as the SDK did), read once: aiohttp's
        ``trust_env`` would read the environment and ~/.netrc again on every call."""

    async def post(self, path: str, body: dict) -> object:
        """The decoded JSON answer to ``body`` posted at ``path``; SDK errors on failure."""
        url = self.base_url + path
        try:
            async with self._session.post(url, data=json.dumps(body).encode(),
                                          proxy=self.proxy) as resp:
                raw = await resp.read()
                if resp.status >= 400:
                    raise status_error(url, resp.status, list(resp.headers.items()), raw)
        except TimeoutError as err:  # aiohttp's timeouts are TimeoutErrors too
            raise openai.APITimeoutError(httpx2.Request("POST", url)) from err
        except aiohttp.ClientError as err:  # refused, reset, dropped mid-body
            raise openai.APIConnectionError(message=f"Connection error: {err}",
                                            request=httpx2.Request("POST", url)) from err
        return json.loads(raw)  # a body cut short raises JSONDecodeError (retried)

    async def close(self) -> None:
        await self._session.close()


_KEY = re.compile(r"(sk-[A-Za-z0-9_\-*]{3,}|Bearer\s+\S+)")


def redact(text: str, secret: str | None = None) -> str:
    """``text`` with the secret and anything shaped like an API key replaced."""
    if secret:
        text = text.replace(secret, "***")
    return _KEY.sub("***", text)


def retry_after_s(err: BaseException) -> float | None:
    """Seconds a server asked us to wait (``retry-after-ms`` or ``Retry-After``), if any."""
    resp = getattr(err, "response", None)
    headers = getattr(resp, "headers", None)
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return float(ms) / 1000
        except ValueError:
            pass
    ra = headers.get("retry-after")
    if not ra:
        return None
    try:
        return max(0.0, float(ra))
    except ValueError:
        when = email.utils.parsedate_to_datetime(ra) if ra else None
        return max(0.0, when.timestamp() - time.time()) if when else None


def is_retryable(err: BaseException) -> bool:
    """Transient failures: connection errors, timeouts, 408, 409, 429, 5xx, malformed 200s."""
    if isinstance(err, openai.APIConnectionError | asyncio.TimeoutError):  # incl. APITimeoutError
        return True
    if isinstance(err, json.JSONDecodeError | MalformedResponse
                  | openai.APIResponseValidationError):  # body cut short, no choices, HTML page
        return True
    if isinstance(err, openai.APIStatusError):
        return err.status_code in (408, 409, 429) or err.status_code >= 500
    return False


def describe(err: BaseException, secret: str | None = None) -> str:
    """One line for a failed call (status, kind, the server's message), key redacted."""
    if isinstance(err, openai.AuthenticationError):
        text = f"authentication failed (401): check the API key variable ({err.message})"
    elif isinstance(err, openai.APIStatusError):
        kind = "context length exceeded" if "context" in err.message.lower() else type(err).__name__
        text = f"{kind} ({err.status_code}): {err.message}"
    elif isinstance(err, openai.APITimeoutError | asyncio.TimeoutError):
        text = "request timed out"
    elif isinstance(err, openai.APIConnectionError):
        text = f"connection error: {err.__cause__ or err}"
    elif isinstance(err, json.JSONDecodeError):
        text = f"malformed response (not JSON: {err.msg} at char {err.pos})"
    elif isinstance(err, MalformedResponse):
        text = f"malformed response ({err})"
    else:
        text = f"{type(err).__name__}: {err}"
    return redact(" ".join(text.split())[:300], secret)


async def call_with_retries(
    fn: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    rng: np.random.Generator,
    *,
    secret: str | None = None,
    on_retry: Callable[[BaseException, float], None] | None = None,
) -> tuple[T, int]:
    """``(fn(), retries used)``; raises :class:`PermanentError` when it gives up."""
    try:
        return await retry_async(fn, policy, rng, retryable=is_retryable,
                                 wait_hint=retry_after_s, on_retry=on_retry)
    except RetriesExhausted as err:
        msg = f"gave up after {err.retries} retries: {describe(err.last, secret)}"
        raise PermanentError(msg) from None
    except Exception as err:
        raise PermanentError(describe(err, secret)) from None
