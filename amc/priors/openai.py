"""``OpenAIPrior``: a black-box agent behind any OpenAI-compatible endpoint.

One prior object serves a whole run: one HTTP client (one keep-alive connection pool,
:class:`~amc.priors.transport.JsonClient`), one
:class:`~amc.priors.transport.Limiter` and one :class:`~amc.priors.ledger.Ledger` shared by every
particle of every task. Each proposal:

1. draws the request seed from the particle's generator (one draw, always, so the particle's
   random stream never depends on faults, cache hits or options);
2. stops with ``AgentTurn(error=...)`` if the task's budget is spent or the endpoint rejected
   the key earlier (401 fails fast: later calls do not reach the network);
3. renders the prompt (:mod:`amc.priors.prompts`): chat messages, or a few-shot transcript
   ending in ``Action:`` for completion/base models;
4. answers from the response cache, or calls the endpoint through the limiter with the one
   retry layer (:func:`~amc.priors.transport.call_with_retries`);
5. parses the action (:func:`~amc.priors.parsing.parse_action`), prices the call and records it.

GPT-5-family and o-series models take ``max_completion_tokens``, no temperature/top-p/stop,
and a ``reasoning_effort`` that we always send (pinned, so a provider default change cannot
silently change results).

Registered as prior ``openai``. Example (``params.yaml``)::

    prior: {name: openai, options: {model: gpt-4.1-mini}}   # key from $OPENAI_API_KEY
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlparse

import numpy as np
from pydantic import Field, field_validator

from amc.config import Frozen
from amc.priors.cache import ResponseCache, default_cache_dir
from amc.priors.ledger import Budget, Ledger, Price
from amc.priors.logprobs import logprobs_request, read_top_logprobs
from amc.priors.parsing import parse_action
from amc.priors.prompts import Style, chat_messages, completion_prompt
from amc.priors.transport import (
    JsonClient,
    Limiter,
    MalformedResponse,
    PermanentError,
    RetryPolicy,
    call_with_retries,
    redact,
)
from amc.protocols import CompletionClient, NextTokenLogprobs, WantsValidActions
from amc.registry import PRIORS
from amc.types import INVALID_ACTION, AgentTurn, History, Usage

log = logging.getLogger("amc.priors")

DEFAULT_BASE_URL = "https://api.openai.com/v1"
LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "0.0.0.0"})
REASONING_PREFIXES = ("gpt-5", "o1", "o3", "o4")
PINNED_EFFORT = {"gpt-5.1": "none", "gpt-5": "medium", "o": "medium"}
"""reasoning_effort sent when the config sets none (the providers' documented defaults)."""


class OpenAIOptions(Frozen):
    """An OpenAI-compatible endpoint and how to sample from it."""

    model: str = "gpt-4.1-mini"
    """Model name sent to the endpoint (also selects the price and GPT-5 parameter rules)."""
    base_url: str | None = None
    """Endpoint URL ending in /v1; default $OPENAI_BASE_URL, else the OpenAI API."""
    api_key_env: str = "OPENAI_API_KEY"
    """Name of the environment variable holding the key (keys never go in config files)."""
    endpoint: Literal["chat", "completions"] = "chat"
    """chat: chat models; completions: base models driven by a few-shot transcript."""
    prompt: Style = "react"
    """react, reflact (SciWorld) or menu (numbered valid actions; for small models)."""
    temperature: float = Field(1.0, ge=0)
    """Sampling temperature (not sent to GPT-5/o-series models)."""
    top_p: float | None = Field(0.95, gt=0, le=1)
    """Nucleus sampling (not sent to GPT-5/o-series models)."""
    max_tokens: int | None = Field(None, ge=1)
    """Output cap; default 1024 (chat), 64 (completions), 4096 (reasoning models)."""
    stop: tuple[str, ...] | None = None
    """Stop strings; completions default to a newline (one action per call)."""
    reasoning_effort: str | None = None
    """GPT-5/o-series effort; None pins the model's documented default (gpt-5.1: none)."""
    send_seed: bool = True
    """Send the per-request seed (servers that honour it become reproducible)."""
    extra_body: dict[str, Any] = Field(default_factory=dict)
    """Extra request fields for self-hosted servers (e.g. top_k, min_p)."""
    max_in_flight: int = Field(64, ge=1)
    """Global cap on concurrent requests across all particles and tasks."""
    tokens_per_minute: int | None = Field(None, ge=1)
    """Optional token-rate cap (estimated prompt tokens + max_tokens per call)."""
    timeout_s: float = Field(60.0, gt=0)
    """Per-call timeout (seconds); a timeout is retried."""
    max_retries: int = Field(6, ge=0)
    """Retries of a transient failure (429, 5xx, timeout, connection) before giving up."""
    backoff_base_s: float = Field(0.5, gt=0)
    """First backoff ceiling; doubles per retry (full jitter)."""
    backoff_max_s: float = Field(30.0, gt=0)
    """Largest backoff ceiling."""
    budget_tokens: int | None = Field(None, ge=1)
    """Per-task token cap; past it the task's particles stop proposing."""
    budget_usd: float | None = Field(None, gt=0)
    """Per-task dollar cap."""
    price: Price | None = None
    """Price override (USD per 1M tokens); default from the package's price table."""
    cache: bool = True
    """Answer repeated (request, seed) pairs from the sqlite response cache."""
    cache_replays_usage: bool = True
    """On a cache hit, report the stored call's tokens and dollars (what the call costs without
    the cache) instead of zero. Methods of one run share calls through common random numbers
    (same run seed, same request seeds), so without this a method's cost would depend on which
    methods ran before it; False reports what this invocation actually paid."""
    cache_path: str | None = None
    """Cache file; default $AMC_CACHE/responses.sqlite (AMC_CACHE defaults to .cache)."""
    max_history_steps: int = Field(30, ge=1)
    """Most recent steps shown in the prompt (older ones are elided)."""
    menu_limit: int = Field(60, ge=1)
    """Most valid actions listed in a menu prompt."""

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, url: str | None) -> str | None:
        """An address the client can call: http(s)://host[:port]/path."""
        if url is not None:
            parts = urlparse(url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError(f"base_url must be an http(s)://host/... URL, got {url!r}")
        return url


def is_local(url: str) -> bool:
    """Whether ``url`` points at this machine (no key needed)."""
    return (urlparse(url).hostname or "") in LOCAL_HOSTS


def is_reasoning_model(model: str) -> bool:
    return model.lower().startswith(REASONING_PREFIXES)


def _read_response(resp: Any, endpoint: str) -> tuple[str, tuple[int, int, int]]:
    """Text and (prompt, completion, cached) tokens of a JSON completion response.

    Raises :class:`MalformedResponse` (retried) when the answer holds no completion: not an
    object, empty ``choices``, or null content. An empty string is a real (if useless) answer.
    """
    if not isinstance(resp, dict):
        raise MalformedResponse(f"expected a JSON object, got {type(resp).__name__}")
    choices = resp.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise MalformedResponse("no choices in the answer")
    first = choices[0]
    text = (first.get("message") or {}).get("content") if endpoint == "chat" else first.get("text")
    if not isinstance(text, str):
        raise MalformedResponse("null content in the answer")
    u = resp.get("usage") or {}
    cached = (u.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    tokens = (int(u.get("prompt_tokens") or 0), int(u.get("completion_tokens") or 0), int(cached))
    return text, tokens


Reader = Callable[[Any, str], tuple[str, tuple[int, int, int]]]
"""An answer's text and (prompt, completion, cached) tokens, or a raised failure."""


@dataclass
class _LoopState:
    """Client and limiter bound to one event loop (asyncio objects cannot cross loops)."""

    loop: asyncio.AbstractEventLoop
    client: JsonClient
    limiter: Limiter


class OpenAIPrior(WantsValidActions, CompletionClient, NextTokenLogprobs):
    """The agent behind an OpenAI-compatible endpoint (see the module docstring)."""

    def __init__(self, options: OpenAIOptions, env: str = "generic",
                 ledger: Ledger | None = None) -> None:
        self.options = options
        self.env = env
        self.base_url = options.base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        key = os.environ.get(options.api_key_env, "")
        if not key and not is_local(self.base_url):
            raise ValueError(
                f"no API key for {self.base_url}: set the environment variable "
                f"{options.api_key_env} (or point base_url at a local server)"
            )
        self._key = key or "sk-local"
        self._price_model = "local" if is_local(self.base_url) else options.model
        """The price table's name for this endpoint's model (a local server costs nothing)."""
        self.server_id = self.base_url
        """Who answers (the response cache's key): the endpoint's URL by default."""
        self.ledger = ledger or Ledger(Budget(max_tokens=options.budget_tokens,
                                              max_usd=options.budget_usd))
        self.retry = RetryPolicy(options.max_retries, options.backoff_base_s, options.backoff_max_s)
        self.cache: ResponseCache | None = None
        if options.cache:
            path = options.cache_path or default_cache_dir() / "responses.sqlite"
            self.cache = ResponseCache(path)
        self._state: _LoopState | None = None
        self._fatal: str | None = None
        self.retries = 0

    @property
    def wants_valid_actions(self) -> bool:
        """The menu prompt lists the environment's valid actions: ask the driver for them."""
        return self.options.prompt == "menu"

    def __repr__(self) -> str:  # never show the key
        return f"OpenAIPrior(model={self.options.model!r}, base_url={self.base_url!r})"

    # -- plumbing ---------------------------------------------------------------------------
    def loop_state(self) -> _LoopState:
        """The shared client and limiter for the running event loop (built on first use)."""
        loop = asyncio.get_running_loop()
        if self._state is None or self._state.loop is not loop:
            # exactly one retry layer: ours (the client never retries)
            client = JsonClient(self.base_url, self._key, self.options.timeout_s,
                                connections=self.options.max_in_flight)
            limiter = Limiter(self.options.max_in_flight, self.options.tokens_per_minute)
            self._state = _LoopState(loop, client, limiter)
        return self._state

    @property
    def limiter(self) -> Limiter | None:
        return self._state.limiter if self._state else None

    def build_request(self, history: History, seed: int) -> dict[str, Any]:
        """The full request body (model, prompt, sampling parameters, seed)."""
        o = self.options
        reasoning = is_reasoning_model(o.model)
        prompt_args: dict[str, Any] = {"max_steps": o.max_history_steps,
                                       "menu_limit": o.menu_limit}
        req: dict[str, Any] = {"model": o.model}
        if o.endpoint == "chat":
            req["messages"] = chat_messages(history, self.env, o.prompt, **prompt_args)
        else:
            req["prompt"] = completion_prompt(history, self.env, o.prompt, **prompt_args)
        if reasoning:
            req["max_completion_tokens"] = o.max_tokens or 4096
            effort = o.reasoning_effort or next(
                v for k, v in PINNED_EFFORT.items() if o.model.lower().startswith(k)
            )
            req["reasoning_effort"] = effort
        else:
            req["max_tokens"] = o.max_tokens or (1024 if o.endpoint == "chat" else 64)
            req["temperature"] = o.temperature
            if o.top_p is not None:
                req["top_p"] = o.top_p
            stop = o.stop
            if stop is None:  # completions answer one action line
                stop = ("\n",) if o.endpoint == "completions" else ()
            if stop:
                req["stop"] = list(stop)
        if o.send_seed:
            req["seed"] = seed
        req.update(o.extra_body)
        return req

    async def generate(self, request: dict[str, Any], *, task_id: str, seed: int,
                       read: Reader = _read_response) -> tuple[str, Usage, str | None]:
        """``(text, usage, error)`` for one request: cache, limiter, retries, ledger (``read``
        turns an answer into text and tokens: the completion's, or its next-token logprobs)."""
        endpoint = "chat" if "messages" in request else "completions"
        key = None
        if self.cache is not None:
            key = ResponseCache.key(self.options.model, endpoint, request, seed,
                                    server=self.server_id)
            hit = self.cache.get(key)
            if hit is not None:
                self.ledger.cache_hits += 1
                if not self.options.cache_replays_usage:
                    return hit[0], Usage(), None  # a replay costs nothing
                usage = dataclasses.replace(hit[1], retries=0)
                self.ledger.record(task_id, usage)  # per-task budgets see the same spend
                return hit[0], usage, None
        st = self.loop_state()
        path = "/chat/completions" if endpoint == "chat" else "/completions"
        text_len = sum(len(m["content"]) for m in request.get("messages", [])) + len(
            request.get("prompt", ""))
        est = text_len // 4 + int(request.get("max_tokens")
                                  or request.get("max_completion_tokens") or 0)

        def on_retry(err: BaseException, wait: float) -> None:
            self.retries += 1
            seen[0] += 1
            log.info("retrying %s call in %.2fs: %s", self.options.model, wait,
                     redact(str(err)[:200], self._key))

        async def attempt() -> tuple[str, tuple[int, int, int]]:
            # A plain JSON POST (no SDK request or response models: the client's CPU per call
            # is what limits one event loop driving hundreds of particles). Reading the answer
            # inside the attempt makes a malformed 200 one more retried failure.
            resp = await st.limiter.run(est, lambda: st.client.post(path, request))
            return read(resp, endpoint)

        jitter = np.random.default_rng([seed, 0x5EED])  # never the particle's generator
        seen = [0]  # retries of this call
        try:
            (text, toks), retries = await call_with_retries(
                attempt, self.retry, jitter, secret=self._key, on_retry=on_retry)
        except PermanentError as err:
            reason = str(err)
            if "authentication failed" in reason and self._fatal is None:
                self._fatal = reason
                log.error("prior %s: %s", self.options.model, reason)
            self.ledger.record_failure(reason)
            usage = Usage(retries=seen[0])
            self.ledger.record(task_id, usage)
            return "", usage, reason
        prompt_toks, completion_toks, cached = toks
        usage = self.ledger.price(
            self._price_model, prompt_toks, completion_toks, cached, price=self.options.price,
            retries=retries,
        )
        self.ledger.record(task_id, usage)
        if self.cache is not None and key is not None:
            self.cache.put(key, text, usage)
        return text, usage, None

    # -- the Prior protocol -----------------------------------------------------------------
    async def propose(self, history: History, rng: np.random.Generator) -> AgentTurn:
        """Sample one agent turn for ``history`` (see the module docstring)."""
        seed = int(rng.integers(0, 2**31 - 1))
        stop = self._fatal or self.ledger.exhausted(history.task_id)
        if stop:
            return AgentTurn(raw_text="", action=INVALID_ACTION, error=stop)
        request = self.build_request(history, seed)
        text, usage, error = await self.generate(request, task_id=history.task_id, seed=seed)
        if error is not None:
            return AgentTurn(raw_text="", action=INVALID_ACTION, usage=usage, error=error)
        action = parse_action(text, self.env, history.valid_actions,
                              prefilled=self.options.endpoint == "completions")
        return AgentTurn(raw_text=text, action=action, usage=usage)

    async def complete(self, prompt: str, *, max_tokens: int = 128) -> tuple[str, Usage]:
        """Greedy answer to a plain prompt through the same client, retries, cache and ledger.

        Used by LLM-prompted value functions (zero-shot, FoA). Temperature 0 and a fixed seed
        make it deterministic and cacheable; a failed call raises ``RuntimeError``.
        """
        o = self.options
        req: dict[str, Any] = {"model": o.model}
        if o.endpoint == "chat":
            req["messages"] = [{"role": "user", "content": prompt}]
        else:
            req["prompt"] = prompt
            req["stop"] = ["\n\n"]
        if is_reasoning_model(o.model):
            req["max_completion_tokens"] = max(max_tokens, 1024)
            req["reasoning_effort"] = o.reasoning_effort or next(
                v for k, v in PINNED_EFFORT.items() if o.model.lower().startswith(k))
        else:
            req.update(max_tokens=max_tokens, temperature=0.0)
        if o.send_seed:
            req["seed"] = 0
        text, usage, error = await self.generate(req, task_id="<value>", seed=0)
        if error is not None:
            raise RuntimeError(error)
        return text, usage

    async def next_token_logprobs(self, prompt: str, *, top: int = 20
                                  ) -> tuple[dict[str, float], Usage]:
        """The ``top`` most likely next tokens after ``prompt`` and their log-probabilities
        (:mod:`amc.priors.logprobs`), through the same client, retries, cache and ledger."""
        if is_reasoning_model(self.options.model):
            raise ValueError(f"{self.options.model} returns no token log-probabilities")
        req = logprobs_request(self.options.model, self.options.endpoint, prompt, top)
        if self.options.send_seed:
            req["seed"] = 0
        text, usage, error = await self.generate(req, task_id="<value>", seed=0,
                                                 read=read_top_logprobs)
        if error is not None:
            raise RuntimeError(error)
        return json.loads(text), usage

    async def aclose(self) -> None:
        """Close the client (the shared connection pool) and the cache."""
        if self._state is not None:
            await self._state.client.close()
            self._state = None
        if self.cache is not None:
            self.cache.close()
            self.cache = None


@PRIORS.register("openai", options=OpenAIOptions)
def make_openai_prior(options: OpenAIOptions, *, env_name: str = "generic",
                      **_: object) -> OpenAIPrior:
    """Any OpenAI-compatible endpoint (API key from $OPENAI_API_KEY)."""
    return OpenAIPrior(options, env=env_name)
