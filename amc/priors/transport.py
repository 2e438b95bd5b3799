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
  SDK's errors to classify. The SDK's
  own retries are switched off (``max_retries=0``) so there is exactly one layer. Jitter is
  drawn from a generator the caller seeds (from the request's seed), never from global
  randomness, and never from the particle's generator: a fault therefore cannot change which
  actions are sampled later.
- Everything else (400 bad request, context overflow, 401/403, 404, 422) is permanent:
  :class:`PermanentError` carries a one-line reason, with any API key redacted.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import re
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import numpy as np
import openai

from amc.retry import RetriesExhausted, RetryPolicy, retry_async

__all__ = ["Limiter", "MalformedResponse", "PermanentError", "RetryPolicy", "call_with_retries",
           "describe", "is_retryable", "redact", "retry_after_s"]

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
