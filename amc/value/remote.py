"""The ``remote`` value: f(s) from a served value head, one HTTP call per scoring batch.

A value head logged by :func:`amc.value.registry.log_value_model` is served with::

    mlflow models serve -m models:/amc-value-textcraft@champion --env-manager local -p 5001

and ``value={"name": "remote", "options": {"url": "http://127.0.0.1:5001/invocations"}}``
scores a step's particles with it. Each :meth:`RemoteValue.score` call sends all its states in
one ``POST /invocations`` (the ``history`` input form of :mod:`amc.value.serve_io`), so the
*server* renders them with the model's own render options and tokenizer: the client needs
neither the model nor its prompt format, and the values equal in-process
:class:`~amc.value.scorers.LearnedValue` scoring (up to float round-off of batch padding).

Failures go through the ONE retry layer of the priors (:mod:`amc.priors.transport`): HTTP
errors are raised as the OpenAI SDK's httpx-based exception types that the layer classifies,
so 408/409/429/5xx, timeouts and dropped connections are retried with jittered backoff (or
``Retry-After``), and any other 4xx fails at once with a one-line :class:`PermanentError`.

Out of range: the server clips ``value`` into the reward range and flags the row. ``use="raw"``
(default) takes the unclipped output, exactly what in-process scoring returns; ``"clipped"``
takes the clipped value. A non-finite prediction is always an error (the model is broken).
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Sequence
from typing import Any, Literal

import httpx
import numpy as np
import openai
from pydantic import Field, field_validator

from amc.config import Frozen
from amc.priors.transport import PermanentError, RetryPolicy, call_with_retries
from amc.registry import VALUES
from amc.types import History
from amc.value.serve_io import history_to_json, invocations_body, parse_predictions


class RemoteValueOptions(Frozen):
    """Options of the remote (served) value function."""

    url: str
    """The served model's scoring endpoint, e.g. http://127.0.0.1:5001/invocations."""
    timeout_s: float = Field(60.0, gt=0)
    """Seconds one HTTP request may take (connect + answer) before it is retried."""
    max_retries: int = Field(4, ge=0)
    """Retries of one request on 408/409/429/5xx, timeouts and dropped connections."""
    backoff_s: float = Field(0.5, ge=0)
    """Base delay of the full-jitter exponential backoff between retries, seconds."""
    use: Literal["raw", "clipped"] = "raw"
    """Which prediction to use: the raw model output (as in-process scoring) or the clipped one."""
    seed: int = 0
    """Seed of the backoff jitter (timing only; never changes a value)."""

    @field_validator("url")
    @classmethod
    def _http_url(cls, url: str) -> str:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"url must start with http:// or https://, got {url!r}")
        return url


class RemoteValue:
    """f(s) from ``POST /invocations`` of a served value head; one request per score() call."""

    def __init__(self, options: RemoteValueOptions,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.options = options
        self.policy = RetryPolicy(max_retries=options.max_retries,
                                  base_delay_s=options.backoff_s)
        self._rng = np.random.default_rng(options.seed)  # backoff jitter only
        self._transport = transport
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.stats = {"calls": 0, "states": 0, "retries": 0, "clipped": 0}

    def _http(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:  # a client binds to its event loop
            self._client = httpx.AsyncClient(timeout=self.options.timeout_s,
                                             transport=self._transport)
            self._loop = loop
        return self._client

    async def _post(self, body: dict[str, Any]) -> Any:
        """One request; failures raised as the transport layer's (OpenAI SDK) error types."""
        url = self.options.url
        try:
            resp = await self._http().post(url, json=body)
        except httpx.TimeoutException as err:
            # openai's exception types annotate its own vendored httpx; httpx objects work.
            raise openai.APITimeoutError(
                request=httpx.Request("POST", url)) from err  # type: ignore[arg-type]
        except httpx.TransportError as err:
            raise openai.APIConnectionError(message=f"{type(err).__name__}: {err}",
                                            request=httpx.Request("POST", url),  # type: ignore[arg-type]
                                            ) from err
        if resp.status_code >= 400:
            text = " ".join(resp.text.split())[:200]
            raise openai.APIStatusError(f"value server: {text}", response=resp,  # type: ignore[arg-type]
                                        body=None)
        return resp.json()

    async def score(self, histories: Sequence[History]) -> list[float]:
        """One value per history, in order, from a single ``/invocations`` request."""
        if not histories:
            return []
        body = invocations_body([history_to_json(h) for h in histories])
        try:
            payload, retries = await call_with_retries(lambda: self._post(body), self.policy,
                                                       self._rng)
        except PermanentError as err:
            raise PermanentError(f"remote value {self.options.url}: {err}") from None
        self.stats["calls"] += 1
        self.stats["states"] += len(histories)
        self.stats["retries"] += retries
        value, raw, status = parse_predictions(payload, len(histories))
        if "nonfinite" in status:
            i = status.index("nonfinite")
            raise ValueError(f"remote value {self.options.url}: non-finite prediction {raw[i]} "
                             f"for state {i} of {len(histories)}")
        clipped = status.count("clipped")
        if clipped:
            self.stats["clipped"] += clipped
            warnings.warn(f"remote value: {clipped} of {len(histories)} predictions outside "
                          f"the reward range (using {self.options.use})", stacklevel=2)
        return raw if self.options.use == "raw" else value

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


@VALUES.register("remote", options=RemoteValueOptions)
def make_remote_value(options: RemoteValueOptions, **_: object) -> RemoteValue:
    """A value head served over HTTP (mlflow models serve), one request per scoring batch."""
    return RemoteValue(options)
