"""The loopback toy model on a lean HTTP server, for client benchmarks only.

The same answers as :mod:`tests.priors.loopback` (its ``toy_answer`` and ``completion``) after a
fixed delay, without fault injection, served by aiohttp's web server (C HTTP parser) instead of
FastAPI on uvicorn: on a shared 2-core machine the server's own CPU per call competes with the
client's, which a remote API's does not, so the cheaper the stand-in the more the step time
measures the client.

Run: ``python -m benchmarks.lean_server --port P --delay-s 0.2`` (binds 127.0.0.1).
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from aiohttp import web

from tests.priors.loopback import completion, toy_answer


def app(delay_s: float) -> web.Application:
    async def answer(request: web.Request, chat: bool) -> web.Response:
        body: dict[str, Any] = await request.json()
        msgs = body.get("messages") or []
        prompt = "\n".join(m["content"] for m in msgs) if chat else body["prompt"]
        if delay_s:
            await asyncio.sleep(delay_s)
        return web.json_response(completion(body, toy_answer(prompt, body.get("seed")),
                                            chat, None))

    async def chat(request: web.Request) -> web.Response:
        return await answer(request, chat=True)

    async def completions(request: web.Request) -> web.Response:
        return await answer(request, chat=False)

    async def models(_: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "toy", "object": "model"}]})

    a = web.Application()
    a.add_routes([web.post("/v1/chat/completions", chat),
                  web.post("/v1/completions", completions), web.get("/v1/models", models)])
    return a


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--delay-s", type=float, default=0.0)
    args = ap.parse_args()
    web.run_app(app(args.delay_s), host="127.0.0.1", port=args.port, print=None,
                access_log=None)


if __name__ == "__main__":
    main()
