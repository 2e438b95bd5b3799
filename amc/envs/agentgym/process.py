"""Run ``amc serve-env`` in a child process: start it on a free loopback port, wait until it
answers, stop it (and everything it started, e.g. ScienceWorld JVMs) cleanly.

Used by the AgentGym tests and benchmarks, and by anyone who wants environments in a separate
process from the sampler::

    with spawn_env_server("textcraft") as srv:
        ...  # env: {name: agentgym, options: {base_url: srv.url}}
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from amc.ports import free_port


@dataclass
class ServerProcess:
    """A running ``amc serve-env``: its base URL and process (leader of its own group)."""

    url: str
    proc: subprocess.Popen

    def stop(self, timeout: float = 60) -> None:
        """SIGTERM the server (a graceful shutdown closes its envs), then kill its group."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def spawn_env_server(
    name: str,
    options: dict[str, object] | None = None,
    *,
    max_envs: int = 64,
    host: str = "127.0.0.1",
    wait_s: float = 120,
    cwd: str | Path | None = None,
) -> ServerProcess:
    """Start ``amc serve-env NAME`` on a free port of ``host``; return once it answers."""
    port = free_port(host)
    cmd = [sys.executable, "-m", "amc.cli", "serve-env", name, "--host", host,
           "--port", str(port), "--max-envs", str(max_envs)]
    if options:
        cmd += ["--options-json", json.dumps(options)]
    proc = subprocess.Popen(cmd, cwd=cwd, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    server = ServerProcess(f"http://{host}:{port}", proc)
    deadline = time.monotonic() + wait_s
    while True:
        if proc.poll() is not None:
            err = proc.stderr.read().decode(errors="replace")[-2000:] if proc.stderr else ""
            raise RuntimeError(f"serve-env {name} exited: {err}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(server.url + "/", timeout=2).status_code == 200:
                return server
        if time.monotonic() > deadline:
            server.stop()
            raise RuntimeError(f"serve-env {name} did not answer within {wait_s:.0f} s")
        time.sleep(0.2)
