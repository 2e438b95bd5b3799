"""The one retry loop of every HTTP client: exponential backoff with full jitter, Retry-After.

A caller says which failures are transient (``retryable``) and how long a failure asks to be
waited for (``wait_hint``: a server's ``Retry-After``); :func:`retry_async` and
:func:`retry_sync` then retry with waits drawn by :meth:`RetryPolicy.backoff` from a generator
the caller seeds, so a fault never consumes randomness that decides results. After
``max_retries`` retries the last failure is raised as :class:`RetriesExhausted`; a failure
that is not transient is re-raised at once, unchanged.

Users: the model clients (:mod:`amc.priors.transport`, which classifies OpenAI-SDK errors)
and the AgentGym environment client (:mod:`amc.envs.agentgym.client`, httpx errors and 503s).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """How long to keep trying one call."""

    max_retries: int = 6
    """Retries after the first attempt before giving up."""
    base_delay_s: float = 0.5
    """Backoff ceiling of the first retry; doubles per retry."""
    max_delay_s: float = 30.0
    """Largest backoff ceiling."""
    max_retry_after_s: float = 120.0
    """Longest ``Retry-After`` we honour; longer waits are capped here."""

    def backoff(self, attempt: int, rng: np.random.Generator) -> float:
        """Full-jitter exponential backoff for retry number ``attempt`` (0-based), seconds."""
        cap = min(self.max_delay_s, self.base_delay_s * 2.0**attempt)
        return float(rng.uniform(0.0, cap))

    def wait(self, attempt: int, rng: np.random.Generator, hint: float | None) -> float:
        """The server's requested wait (capped) when it gave one, else :meth:`backoff`."""
        return self.backoff(attempt, rng) if hint is None else min(hint, self.max_retry_after_s)


class RetriesExhausted(Exception):
    """A transient failure that outlived every retry: ``last`` and how many were made."""

    def __init__(self, last: BaseException, retries: int) -> None:
        super().__init__(f"gave up after {retries} retries: {last}")
        self.last, self.retries = last, retries


def _next_wait(err: Exception, attempt: int, policy: RetryPolicy, rng: np.random.Generator,
               retryable: Callable[[BaseException], bool],
               wait_hint: Callable[[BaseException], float | None] | None) -> float:
    """Seconds before the next attempt; raises when there is none."""
    if not retryable(err):
        raise err
    if attempt >= policy.max_retries:
        raise RetriesExhausted(err, attempt) from err
    return policy.wait(attempt, rng, wait_hint(err) if wait_hint else None)


async def retry_async(
    fn: Callable[[], Awaitable[T]], policy: RetryPolicy, rng: np.random.Generator, *,
    retryable: Callable[[BaseException], bool],
    wait_hint: Callable[[BaseException], float | None] | None = None,
    on_retry: Callable[[BaseException, float], None] | None = None,
) -> tuple[T, int]:
    """``(await fn(), retries used)``, retrying transient failures (see the module)."""
    attempt = 0
    while True:
        try:
            return await fn(), attempt
        except Exception as err:
            wait = _next_wait(err, attempt, policy, rng, retryable, wait_hint)
            if on_retry is not None:
                on_retry(err, wait)
            attempt += 1
            await asyncio.sleep(wait)


def retry_sync(
    fn: Callable[[], T], policy: RetryPolicy, rng: np.random.Generator, *,
    retryable: Callable[[BaseException], bool],
    wait_hint: Callable[[BaseException], float | None] | None = None,
    on_retry: Callable[[BaseException, float], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[T, int]:
    """``(fn(), retries used)``: :func:`retry_async` for blocking clients."""
    attempt = 0
    while True:
        try:
            return fn(), attempt
        except Exception as err:
            wait = _next_wait(err, attempt, policy, rng, retryable, wait_hint)
            if on_retry is not None:
                on_retry(err, wait)
            attempt += 1
            sleep(wait)
