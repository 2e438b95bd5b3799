"""The AgentGym client's requests on the project's one retry loop (:mod:`amc.retry`).

Transient failures -- a 503, a refused or dropped connection, a connect timeout, and a read
timeout where the caller allows it -- are retried with exponential backoff and full jitter
(a 503's ``Retry-After`` is honoured). After the last retry a 503 is handed back as the
response (the caller reports it); a connection failure or timeout becomes an
:class:`~amc.envs.agentgym.options.AgentGymError`. Every other answer returns at once.

Jitter only spaces out retries, results never depend on it: each request draws from its own
stream of the suite's :class:`Jitter` (entropy fixed per suite), so concurrent clients do not
retry in lockstep and no generator is shared between threads.
"""

from __future__ import annotations

import itertools
import logging
from typing import Any, Protocol

import httpx
import numpy as np

from amc.envs.agentgym.options import AgentGymError, AgentGymOptions
from amc.retry import RetriesExhausted, RetryPolicy, retry_sync

log = logging.getLogger(__name__)


class Jitter:
    """One generator per request, from a per-suite seed and a request counter."""

    def __init__(self, seed: int | None = None) -> None:
        fresh = np.random.SeedSequence().generate_state(1, np.uint64)[0]
        self.seed = int(fresh if seed is None else seed)
        self._count = itertools.count()

    def rng(self) -> np.random.Generator:
        return np.random.default_rng([self.seed, next(self._count)])


class Client(Protocol):
    """What :func:`send` needs of the suite."""

    options: AgentGymOptions
    http: httpx.Client
    retry: RetryPolicy
    jitter: Jitter
    retries: int


class Unavailable(Exception):
    """A 503 answer (retried; the last one is returned to the caller)."""

    def __init__(self, resp: httpx.Response) -> None:
        super().__init__(f"HTTP 503: {resp.text[:200]}")
        self.resp = resp


def retry_after_s(err: BaseException) -> float | None:
    """The wait a 503 asked for (``Retry-After`` seconds), if any."""
    if not isinstance(err, Unavailable):
        return None
    try:
        return max(0.0, float(err.resp.headers.get("retry-after", "")))
    except ValueError:
        return None


def transient(err: BaseException, retry_read: bool) -> bool:
    """503s and connection failures; read timeouts only when ``retry_read``."""
    if isinstance(err, httpx.ReadTimeout):
        return retry_read
    return isinstance(err, Unavailable | httpx.ConnectError | httpx.ConnectTimeout
                      | httpx.RemoteProtocolError)


def send(client: Client, method: str, path: str, *, json_body: Any = None,
         params: dict[str, Any] | None = None, retry_read: bool = True) -> httpx.Response:
    """One request with retries (see the module docstring)."""
    o = client.options
    where = f"{method} {o.base_url}{path}"

    def attempt() -> httpx.Response:
        resp = client.http.request(method, path, json=json_body, params=params)
        if resp.status_code == 503:
            raise Unavailable(resp)
        return resp

    def counted(err: BaseException, wait: float) -> None:
        client.retries += 1
        log.info("retrying %s in %.2fs: %r", where, wait, err)

    try:
        return retry_sync(attempt, client.retry, client.jitter.rng(),
                          retryable=lambda e: transient(e, retry_read),
                          wait_hint=retry_after_s, on_retry=counted)[0]
    except RetriesExhausted as err:
        return give_up(where, err.last, o.timeout_s)
    except (Unavailable, httpx.ReadTimeout) as err:  # a read timeout that is not retried
        return give_up(where, err, o.timeout_s)


def give_up(where: str, err: BaseException, timeout_s: float) -> httpx.Response:
    """The last 503 answer as is; a connection failure or timeout as :class:`AgentGymError`."""
    if isinstance(err, Unavailable):
        return err.resp
    if isinstance(err, httpx.ReadTimeout):
        raise AgentGymError(f"{where}: no answer within {timeout_s} s") from None
    raise AgentGymError(f"{where}: {err!r}") from None
