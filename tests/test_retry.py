"""The one retry loop (amc.retry): which failures it retries, how long it waits, when it stops."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from amc.retry import RetriesExhausted, RetryPolicy, retry_async, retry_sync


class Flaky:
    """Fails ``n`` times with ``err``, then answers ``"ok"``."""

    def __init__(self, n: int, err: Exception) -> None:
        self.n, self.err, self.calls = n, err, 0

    def __call__(self) -> str:
        self.calls += 1
        if self.calls <= self.n:
            raise self.err
        return "ok"


def transient(err: BaseException) -> bool:
    return isinstance(err, ConnectionError)


def test_transient_failures_are_retried_with_full_jitter_under_a_doubling_cap():
    waits: list[float] = []
    policy = RetryPolicy(max_retries=8, base_delay_s=0.1, max_delay_s=0.5)
    fn = Flaky(6, ConnectionError("refused"))
    out = retry_sync(fn, policy, np.random.default_rng(1), retryable=transient,
                     sleep=waits.append)
    assert out == ("ok", 6) and fn.calls == 7
    caps = [min(0.5, 0.1 * 2**k) for k in range(6)]
    assert all(0 <= w <= c for w, c in zip(waits, caps, strict=True))
    assert len(set(waits)) == 6  # drawn, not a fixed schedule
    again: list[float] = []
    retry_sync(Flaky(6, ConnectionError()), policy, np.random.default_rng(1),
               retryable=transient, sleep=again.append)
    other: list[float] = []
    retry_sync(Flaky(6, ConnectionError()), policy, np.random.default_rng(2),
               retryable=transient, sleep=other.append)
    assert again == waits and other != waits  # the caller's seed decides the jitter


def test_a_servers_wait_is_honoured_and_capped():
    waits: list[float] = []
    policy = RetryPolicy(max_retries=3, max_retry_after_s=2.0)
    retry_sync(Flaky(2, ConnectionError()), policy, np.random.default_rng(0),
               retryable=transient, wait_hint=lambda e: 7.0, sleep=waits.append)
    assert waits == [2.0, 2.0]


def test_permanent_failures_raise_at_once_and_retries_run_out():
    slept: list[float] = []
    fn = Flaky(5, KeyError("bad request"))
    with pytest.raises(KeyError):
        retry_sync(fn, RetryPolicy(), np.random.default_rng(0), retryable=transient,
                   sleep=slept.append)
    assert fn.calls == 1 and slept == []
    fn = Flaky(5, ConnectionError("down"))
    with pytest.raises(RetriesExhausted) as info:
        retry_sync(fn, RetryPolicy(max_retries=2, base_delay_s=0.0), np.random.default_rng(0),
                   retryable=transient, sleep=slept.append)
    assert info.value.retries == 2 and fn.calls == 3 and isinstance(info.value.last,
                                                                    ConnectionError)


def test_the_async_loop_is_the_same_loop():
    seen: list[float] = []
    fn = Flaky(2, ConnectionError())

    async def call() -> str:
        return fn()

    out = asyncio.run(retry_async(call, RetryPolicy(base_delay_s=0.001), np.random.default_rng(0),
                                  retryable=transient, on_retry=lambda e, w: seen.append(w)))
    assert out == ("ok", 2) and len(seen) == 2
