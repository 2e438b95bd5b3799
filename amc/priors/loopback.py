"""A loopback OpenAI-compatible server with a deterministic toy model and fault injection.

This is the HTTP boundary our tests and benchmarks drive instead of a paid API. Its "model"
answers as a pure function of (prompt, seed): when the prompt lists numbered valid actions it
picks one of them (``sha256(seed, prompt)`` modulo the menu size), otherwise it answers
``look around``. So a run's actions depend only on the seeds, and a run that suffers faults
must reproduce a clean run exactly.

Faults are drawn per incoming request from the server's own seeded generator:
``429`` with ``Retry-After``, ``500``, or a stall longer than the client's timeout.
``max_context_tokens`` turns long prompts into the 400 context-length error; ``delay_s`` adds
a fixed latency to every answer (benchmarks); ``require_key`` makes every request with another
key fail with 401, the way the OpenAI API words it.

Example::

    with LoopbackServer(delay_s=0.2) as srv:
        OpenAIOptions(base_url=srv.url, model="toy")
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import socket
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

_MENU_ITEM = re.compile(r"^\s*(\d+)\. (.+)$", re.MULTILINE)


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def toy_answer(prompt: str, seed: int | None) -> str:
    """The toy model's action for ``prompt`` (deterministic in prompt and seed)."""
    tail = prompt[prompt.rfind("Valid actions now:"):] if "Valid actions now:" in prompt else ""
    items = [m.group(2).strip() for m in _MENU_ITEM.finditer(tail)]
    if not items:
        return "look around"
    h = hashlib.sha256(f"{seed}|{prompt}".encode()).digest()
    return items[int.from_bytes(h[:8], "big") % len(items)]


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
    seed: int = 0


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

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def app(self) -> Any:
        app = FastAPI()
        rng = np.random.default_rng(self.faults.seed)
        f = self.faults

        def error(status: int, message: str, headers: dict[str, str] | None = None) -> Any:
            body = {"error": {"message": message, "type": "error", "code": status}}
            return JSONResponse(body, status_code=status, headers=headers)

        async def answer(request: Request, chat: bool) -> Any:
            self.counts["requests"] += 1
            auth = request.headers.get("authorization", "")
            if self.require_key is not None and auth != f"Bearer {self.require_key}":
                self.counts["401"] += 1
                shown = auth.removeprefix("Bearer ")
                return error(401, f"Incorrect API key provided: {shown[:5]}***{shown[-2:]}.")
            u = float(rng.random())
            if u < f.rate_429:
                self.counts["429"] += 1
                return error(429, "Rate limit reached", {"retry-after": f.retry_after})
            if u < f.rate_429 + f.rate_500:
                self.counts["500"] += 1
                return error(500, "The server had an error")
            if u < f.rate_429 + f.rate_500 + f.rate_stall:
                self.counts["stall"] += 1
                await asyncio.sleep(f.stall_s)
            body = await request.json()
            msgs = body.get("messages") or []
            prompt = "\n".join(m["content"] for m in msgs) if chat else body["prompt"]
            if self.max_context_tokens and len(prompt) // 4 > self.max_context_tokens:
                self.counts["400"] += 1
                return error(400, f"This model's maximum context length is "
                                  f"{self.max_context_tokens} tokens.")
            action = toy_answer(prompt, body.get("seed"))
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            self.counts["ok"] += 1
            usage = {"prompt_tokens": len(prompt) // 4, "completion_tokens": 8,
                     "total_tokens": len(prompt) // 4 + 8,
                     "prompt_tokens_details": {"cached_tokens": 0}}
            base = {"id": "toy", "created": int(time.time()), "model": body["model"],
                    "usage": usage}
            if chat:
                msg = {"role": "assistant", "content": f"Thought: one step.\nAction: {action}"}
                choice = {"index": 0, "message": msg, "finish_reason": "stop"}
                return {**base, "object": "chat.completion", "choices": [choice]}
            choice = {"index": 0, "text": f" {action}", "finish_reason": "stop"}
            return {**base, "object": "text_completion", "choices": [choice]}

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
        config = uvicorn.Config(self.app(), host="127.0.0.1", port=self.port,
                                log_level="warning", access_log=False)
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
    """``python -m amc.priors.loopback --port P [--delay-s S]``: serve until interrupted."""
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
