"""A llama.cpp server for one GGUF on 127.0.0.1: started, health-checked, always stopped.

Two backends serve the same OpenAI-compatible ``/v1/completions``:

- ``cpp``: llama.cpp's own C++ ``llama-server``, built by ``scripts/build_llama_server.sh``
  from the llama.cpp vendored in the pinned llama-cpp-python sdist (``build/llama.cpp/bin``). It
  runs ``parallel`` slots with continuous batching: the N proposals of one SMC step decode in
  one batch, so a memory-bound CPU reads the weights once per token for all N sequences
  instead of once per sequence. Each slot keeps the KV cache of its last prompt and a new
  request goes to the slot sharing the longest prefix with it, so a particle's next prompt
  only prefills what its last step appended. ``--swa-full`` keeps Gemma-3's sliding-window
  layers whole, without which a prompt longer than the window (512 tokens) could not be
  reused. Context per slot = ``n_ctx``; the server gets ``n_ctx * parallel`` in all.
- ``python`` (default until the cpp build is measured): llama-cpp-python's server (one slot,
  requests queue; the benchmark's baseline), run as ``python -m amc.priors.llama_app`` so that
  a completion does not depend on the requests served before it (:mod:`amc.priors.llama_app`).

Lifecycle: the server runs in its own process group; readiness is ``GET /health`` (cpp) or
``GET /v1/models`` (python); :meth:`LlamaServer.stop` sends SIGTERM to the group, then SIGKILL.
A normal exit, an exception or garbage collection stops it; a ``kill -9`` of the parent
cannot run any of that, so the child also asks the kernel for ``PR_SET_PDEATHSIG`` = SIGKILL
(Linux) before ``exec``. The kernel sends that signal when the *thread* that forked the
child exits, so every server is forked by one long-lived spawner thread (never a pool thread
of ``asyncio.to_thread``, which ends with its event loop).
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import os
import signal
import subprocess
import sys
import time
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Literal

import httpx

from amc.ports import free_port

Backend = Literal["cpp", "python"]
BINARY_ENV = "AMC_LLAMA_SERVER"
"""Environment variable that overrides the path of the ``llama-server`` binary."""
DEFAULT_BINARY = Path(__file__).resolve().parents[2] / "build/llama.cpp/bin/llama-server"
"""Where scripts/build_llama_server.sh builds it (the repo's ignored build folder)."""
PR_SET_PDEATHSIG = 1  # from <sys/prctl.h>

INSTALL_HINT = {
    "cpp": "the embedded prior needs llama.cpp's llama-server, built portably into "
           "build/llama.cpp by scripts/setup.sh (or set $AMC_LLAMA_SERVER to a portable build; "
           "prior.options.server=python selects llama-cpp-python's server instead)",
    "python": "the embedded prior's python server needs llama-cpp-python[server], built "
              "portably: run scripts/setup.sh (or CMAKE_ARGS=\"-DGGML_NATIVE=OFF "
              "-DLLAVA_BUILD=OFF\" pip install --no-cache-dir 'llama-cpp-python[server]==0.3.36')",
}

_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
_SPAWNER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="amc-llama-spawner")
"""One thread forks every server; it lives as long as the process (see the docstring)."""


def cpp_binary() -> Path | None:
    """The ``llama-server`` binary ($AMC_LLAMA_SERVER, else the setup.sh build), if present."""
    path = Path(os.environ.get(BINARY_ENV) or DEFAULT_BINARY)
    return path if path.is_file() and os.access(path, os.X_OK) else None


def server_available(backend: Backend = "python") -> bool:
    """Whether ``backend`` can run here (without importing llama-cpp-python)."""
    if backend == "cpp":
        return cpp_binary() is not None
    return all(importlib.util.find_spec(m) is not None
               for m in ("llama_cpp", "sse_starlette", "starlette_context", "pydantic_settings"))


def _die_with_parent(parent_pid: int) -> Callable[[], None]:
    """A ``preexec_fn``: SIGKILL this child when the forking thread dies (Linux)."""
    def preexec() -> None:
        if _LIBC is not None:
            _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            if os.getppid() != parent_pid:  # the parent died before prctl took effect
                os._exit(1)
    return preexec


def spawn(cmd: list[str], log_path: Path) -> subprocess.Popen[bytes]:
    """Start ``cmd`` in its own process group, tied to this process's life."""
    def popen() -> subprocess.Popen[bytes]:
        with open(log_path, "wb") as log:
            return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True,
                                    preexec_fn=_die_with_parent(os.getpid()))
    return _SPAWNER.submit(popen).result()


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process group of ``proc``, SIGKILL it after 10 s (idempotent)."""
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


class LlamaServer:
    """One GGUF served on 127.0.0.1 by ``backend`` (a sync context manager)."""

    def __init__(self, gguf: Callable[[], Path], alias: str, *, backend: Backend = "python",
                 port: int | None = None, n_ctx: int = 4096, parallel: int = 16,
                 n_threads: int | None = None, chat_format: str | None = None,
                 prompt_cache: bool = False, cache_ram_mib: int = 512,
                 startup_timeout_s: float = 120.0, log_dir: Callable[[], Path]) -> None:
        if backend not in ("cpp", "python"):
            raise ValueError(f"unknown llama.cpp server backend {backend!r}; use cpp or python")
        self.gguf, self.alias, self.backend = gguf, alias, backend
        self.port = port or free_port()
        self.n_ctx, self.parallel = n_ctx, parallel if backend == "cpp" else 1
        self.n_threads = n_threads or max(1, min(4, os.cpu_count() or 1))
        self.chat_format, self.prompt_cache, self.cache_ram_mib = (chat_format, prompt_cache,
                                                                    cache_ram_mib)
        self.startup_timeout_s = startup_timeout_s
        self.log_dir = log_dir
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path: Path | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def health_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/health" if self.backend == "cpp" else \
            f"{self.url}/models"

    def command(self, gguf: Path) -> list[str]:
        """The server's command line."""
        t = str(self.n_threads)
        if self.backend == "python":
            cmd = [sys.executable, "-m", "amc.priors.llama_app", "--model", str(gguf),
                   "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", str(self.n_ctx),
                   "--n_threads", t, "--n_threads_batch", t, "--model_alias", self.alias]
            if self.chat_format:
                cmd += ["--chat_format", self.chat_format]
            if self.prompt_cache:
                cmd += ["--cache", "true", "--cache_type", "ram", "--cache_size", str(1 << 30)]
            return cmd
        binary = cpp_binary()
        if binary is None:
            raise ValueError(INSTALL_HINT["cpp"])
        return [str(binary), "--model", str(gguf), "--host", "127.0.0.1", "--port",
                str(self.port), "--alias", self.alias, "--threads", t, "--threads-batch", t,
                "--ctx-size", str(self.n_ctx * self.parallel), "--parallel", str(self.parallel),
                "--cont-batching", "--no-kv-unified", "--cache-prompt", "--swa-full",
                "--cache-ram", str(self.cache_ram_mib), "--no-webui"]

    def start(self) -> LlamaServer:
        """Start the server and wait until it is healthy (idempotent)."""
        if self.proc is not None and self.proc.poll() is None:
            return self
        if not server_available(self.backend):
            raise ValueError(INSTALL_HINT[self.backend])
        cmd = self.command(self.gguf())
        logs = self.log_dir()
        logs.mkdir(parents=True, exist_ok=True)
        self.log_path = logs / f"llama-server-{self.port}.log"
        self.proc = spawn(cmd, self.log_path)
        self._finalizer = weakref.finalize(self, kill_group, self.proc)
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                tail = self.log_path.read_text(errors="replace")[-800:]
                raise RuntimeError(f"llama.cpp server exited ({self.proc.returncode}): {tail}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.health_url, timeout=2).status_code == 200:
                    return self
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"llama.cpp server not ready after {self.startup_timeout_s:.0f}s")

    def stop(self) -> None:
        """Stop the server's whole process group (idempotent)."""
        if self.proc is not None:
            kill_group(self.proc)
            self._finalizer.detach()

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
