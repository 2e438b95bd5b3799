"""FROZEN COPY, for benchmarks only: the OpenAI prior's HTTP client before issue 55.

Until issue 55 :class:`~amc.priors.openai.OpenAIPrior` posted every request through the
OpenAI SDK (``openai.AsyncOpenAI(...).post(path, cast_to=object, body=request)``: the SDK's
request options, httpx/httpcore's connection pool, its response wrapper). This module keeps
that code path so ``benchmarks/bench_priors.py`` can measure the previous client side by side
with the current one in the same run. Nothing in ``amc/`` imports it; do not use it for runs.
"""

from __future__ import annotations

import asyncio
from typing import Any

from amc.priors.openai import OpenAIPrior, _LoopState
from amc.priors.transport import Limiter


class SdkClient:
    """The pre-issue-55 transport: the OpenAI SDK's generic POST (no SDK retries)."""

    def __init__(self, base_url: str, key: str, timeout_s: float) -> None:
        import openai

        self._client = openai.AsyncOpenAI(base_url=base_url, api_key=key, max_retries=0,
                                          timeout=timeout_s)

    async def post(self, path: str, body: dict[str, Any]) -> object:
        return await self._client.post(path, cast_to=object, body=body)

    async def close(self) -> None:
        await self._client.close()


class LegacyOpenAIPrior(OpenAIPrior):
    """``OpenAIPrior`` with the SDK client it had before issue 55 (benchmarks only)."""

    def loop_state(self) -> _LoopState:
        loop = asyncio.get_running_loop()
        if self._state is None or self._state.loop is not loop:
            client = SdkClient(self.base_url, self._key, self.options.timeout_s)
            limiter = Limiter(self.options.max_in_flight, self.options.tokens_per_minute)
            self._state = _LoopState(loop, client, limiter)  # type: ignore[arg-type]
        return self._state
