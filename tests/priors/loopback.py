"""A loopback OpenAI-compatible server with a deterministic toy model and fault injection.

This is the HTTP boundary our tests and benchmarks drive instead of a paid API. Its "model"
answers as a pure function of (prompt, seed): when the prompt lists numbered valid actions it
picks one of them (``sha256(seed, prompt)`` modulo the menu size), otherwise it answers
``look around``. So a run's actions depend only on the seeds, and a run that suffers faults
must reproduce a clean run exactly.

Faults are drawn per incoming request from the server's own seeded generator:
``429`` with ``Retry-After``, ``500``, a stall longer than the client's timeout, a dropped
connection (the body stops short of its declared length), a 200 whose JSON body is cut short,
a 200 with empty ``choices``, or one with null content. An outage window answers every request
with 503 for a while (timed from the first request), longer than a client's retry budget if
wanted.
``max_context_tokens`` turns long prompts into the 400 context-length error; ``delay_s`` adds
a fixed latency to every answer (benchmarks); ``require_key`` makes every request with another
key fail with 401, the way the OpenAI API words it. A request with ``logprobs`` also gets the
next token's candidates (``next_tokens``, by default :func:`toy_next_tokens`) in either answer
shape (``logprobs_shape``).

Example::

    with LoopbackServer(delay_s=0.2) as srv:
        OpenAIOptions(base_url=srv.url, model="toy")
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from amc.ports import free_port

_MENU_ITEM = re.compile(r"^\s*(\d+)\. (.+)$", re.MULTILINE)


def toy_answer(prompt: str, seed: int | None) -> str:
    """The toy model's action for ``prompt`` (deterministic in prompt and seed)."""
    tail = prompt[prompt.rfind("Valid actions now:"):] if "Valid actions now:" in prompt else ""
    items = [m.group(2).strip() for m in _MENU_ITEM.finditer(tail)]
    if not items:
        return "look around"
    h = hashlib.sha256(f"{seed}|{prompt}".encode()).digest()
    return items[int.from_bytes(h[:8], "big") % len(items)]


def toy_next_tokens(prompt: str) -> dict[str, float]:
    """The toy model's next-token candidates ``{token: logprob}`` after ``prompt``: `` Yes``
    with a probability drawn from ``sha256(prompt)``, `` No`` and a newline share the rest."""
    h = hashlib.sha256(prompt.encode()).digest()
    p = 0.05 + 0.9 * int.from_bytes(h[:8], "big") / 2**64
    return {" Yes": math.log(0.9 * p), " No": math.log(0.9 * (1 - p)), "\n": math.log(0.1)}


def logprobs_field(top: dict[str, float], shape: str) -> dict[str, Any]:
    """A choice's ``logprobs`` for one generated token (the most likely candidate), in the
    completions API's ``legacy`` shape or the chat API's ``content`` shape (llama-server)."""
    token = max(top, key=top.__getitem__)
    if shape == "legacy":
        return {"tokens": [token], "token_logprobs": [top[token]], "text_offset": [0],
                "top_logprobs": [dict(top)]}
    return {"content": [{"token": token, "logprob": top[token], "top_logprobs": [
        {"token": t, "logprob": lp} for t, lp in top.items()]}]}


@dataclass
class Faults:
    """Probabilities of each fault per request, and how they look."""

    rate_429: float = 0.0
    rate_500: float = 0.0
    rate_stall: float = 0.0
    retry_after: str = "0.1"
    """Value of the Retry-After header sent with 429 (seconds)."""
    stall_s: float = 5.0
    """How long a stalled request hangs before answering (longer than the client timeout)."""
    rate_drop: float = 0.0
    """Connection dropped mid-body (declared Content-Length never arrives)."""
    rate_truncated: float = 0.0
    """200 whose JSON body is cut in half (consistent Content-Length: not JSON)."""
    rate_empty: float = 0.0
    """200 with ``choices: []``."""
    rate_null: float = 0.0
    """200 whose first choice has null content."""
    outage_start_s: float = 0.0
    """Seconds after the first request when the outage window opens."""
    outage_s: float = 0.0
    """Length of the outage window (every request answered 503); 0 = no outage."""
    seed: int = 0

    def draw(self, u: float) -> str | None:
        """The fault for a uniform draw ``u`` (cumulative rates, in a fixed order), if any."""
        edge = 0.0
        for name in FAULT_KINDS:
            edge += getattr(self, f"rate_{name}")
            if u < edge:
                return name
        return None


FAULT_KINDS = ("429", "500", "stall", "drop", "truncated", "empty", "null")
"""Per-request faults in draw order (the first three keep their historical order)."""


def completion(body: dict[str, Any], action: str, chat: bool, fault: str | None) -> dict:
    """The toy model's answer as a completion object (damaged for ``empty``/``null`` faults)."""
    msgs = body.get("messages") or []
    prompt = "\n".join(m["content"] for m in msgs) if chat else body["prompt"]
    usage = {"prompt_tokens": len(prompt) // 4, "completion_tokens": 8,
             "total_tokens": len(prompt) // 4 + 8, "prompt_tokens_details": {"cached_tokens": 0}}
    base = {"id": "toy", "created": int(time.time()), "model": body["model"], "usage": usage}
    if chat:
        content = None if fault == "null" else f"Thought: one step.\nAction: {action}"
        choice: dict[str, Any] = {"index": 0, "finish_reason": "stop",
                                  "message": {"role": "assistant", "content": content}}
    else:
        choice = {"index": 0, "text": None if fault == "null" else f" {action}",
                  "finish_reason": "stop"}
    kind = "chat.completion" if chat else "text_completion"
    return {**base, "object": kind, "choices": [] if fault == "empty" else [choice]}


@dataclass
class LoopbackServer:
    """Run the toy server on a free loopback port in a background thread (context manager)."""

    delay_s: float = 0.0
    faults: Faults = field(default_factory=Faults)
    require_key: str | None = None
    max_context_tokens: int | None = None
    """Prompts longer than this (chars / 4) get the 400 context-length error."""
    counts: Counter = field(default_factory=Counter)
    port: int = 0
    next_tokens: Callable[[str], dict[str, float]] | None = toy_next_tokens
    """The model's next-token candidates for a request with ``logprobs`` (None: the server
    answers without log-probabilities, as one that does not support them)."""
    logprobs_shape: Literal["legacy", "content"] = "legacy"
    """legacy: llama-cpp-python's and OpenAI's completions; content: the chat API's (and
    llama.cpp's llama-server on /v1/completions)."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def app(self) -> Any:
        app = FastAPI()
        rng = np.random.default_rng(self.faults.seed)
        f = self.faults
        started: dict[str, float] = {}  # monotonic time of the first request (outage clock)

        def error(status: int, message: str, headers: dict[str, str] | None = None) -> Any:
            body = {"error": {"message": message, "type": "error", "code": status}}
            return JSONResponse(body, status_code=status, headers=headers)

        async def answer(request: Request, chat: bool) -> Any:
            self.counts["requests"] += 1
            now = time.monotonic()
            first = started.setdefault("t", now)
            auth = request.headers.get("authorization", "")
            if self.require_key is not None and auth != f"Bearer {self.require_key}":
                self.counts["401"] += 1
                shown = auth.removeprefix("Bearer ")
                return error(401, f"Incorrect API key provided: {shown[:5]}***{shown[-2:]}.")
            if f.outage_s and 0 <= now - first - f.outage_start_s < f.outage_s:
                self.counts["outage"] += 1
                return error(503, "Service unavailable (outage)")
            fault = f.draw(float(rng.random()))
            if fault is not None:
                self.counts[fault] += 1
            if fault == "429":
                return error(429, "Rate limit reached", {"retry-after": f.retry_after})
            if fault == "500":
                return error(500, "The server had an error")
            if fault == "stall":
                await asyncio.sleep(f.stall_s)
            if fault == "drop":  # promise more bytes than are sent: the client sees a cut
                return Response(b'{"id": "to', media_type="application/json",
                                headers={"content-length": "4096"})
            body = await request.json()
            msgs = body.get("messages") or []
            prompt = "\n".join(m["content"] for m in msgs) if chat else body["prompt"]
            if self.max_context_tokens and len(prompt) // 4 > self.max_context_tokens:
                self.counts["400"] += 1
                return error(400, f"This model's maximum context length is "
                                  f"{self.max_context_tokens} tokens.")
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            reply = completion(body, toy_answer(prompt, body.get("seed")), chat, fault)
            if body.get("logprobs") and self.next_tokens is not None and reply["choices"]:
                self.counts["logprobs"] += 1
                top = self.next_tokens(prompt)
                reply["choices"][0]["logprobs"] = logprobs_field(top, self.logprobs_shape)
            if fault == "truncated":
                raw = json.dumps(reply).encode()
                return Response(raw[: len(raw) // 2], media_type="application/json")
            if fault is None or fault == "stall":
                self.counts["ok"] += 1
            return JSONResponse(reply)  # skips FastAPI's re-encoding of a returned dict

        @app.get("/v1/models")
        async def models() -> dict[str, Any]:
            return {"object": "list", "data": [{"id": "toy", "object": "model", "owned_by": "amc"}]}

        @app.post("/v1/chat/completions")
        async def chat(request: Request) -> Any:
            return await answer(request, chat=True)

        @app.post("/v1/completions")
        async def completions(request: Request) -> Any:
            return await answer(request, chat=False)

        return app

    def __enter__(self) -> LoopbackServer:
        import uvicorn

        self.port = self.port or free_port()
        # a dropped connection is an error inside uvicorn by design: do not print its traceback
        level = "critical" if self.faults.rate_drop else "warning"
        config = uvicorn.Config(self.app(), host="127.0.0.1", port=self.port,
                                log_level=level, access_log=False)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("loopback server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)


def main() -> None:
    """``python -m tests.priors.loopback --port P [--delay-s S]``: serve until interrupted."""
    import argparse

    ap = argparse.ArgumentParser(description="Loopback OpenAI-compatible toy server.")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--delay-s", type=float, default=0.0)
    args = ap.parse_args()
    import uvicorn

    uvicorn.run(LoopbackServer(delay_s=args.delay_s).app(), host="127.0.0.1", port=args.port,
                log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
