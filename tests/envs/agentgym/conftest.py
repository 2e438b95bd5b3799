"""Fixtures for the AgentGym client against live `amc serve-env` servers (WebShop, SciWorld).

Each server is a subprocess on a free loopback port, in its own session (process group) so a
leftover can always be killed; :func:`java_descendants` lists the JVMs under a process (read
from /proc) so the SciWorld tests can check that none outlives its server.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from amc.envs.webshop_fixture import write_fixture_catalog

REPO = Path(__file__).resolve().parents[3]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _children() -> dict[int, list[int]]:
    """ppid -> child pids, and pid -> comm, from /proc (Linux)."""
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue  # exited meanwhile
        # "pid (comm) state ppid ...": comm may contain spaces, so split after the last ')'
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        kids.setdefault(ppid, []).append(int(entry))
    return kids


def java_descendants(pid: int) -> set[int]:
    """Pids of the live `java` processes below ``pid`` (any depth)."""
    kids, out, todo = _children(), set(), [pid]
    while todo:
        for c in kids.get(todo.pop(), []):
            todo.append(c)
            try:
                if Path(f"/proc/{c}/comm").read_text().strip() == "java":
                    out.add(c)
            except OSError:
                pass
    return out


def alive(pids: set[int]) -> set[int]:
    """The pids of ``pids`` that still run (zombies count as gone)."""
    out = set()
    for p in pids:
        try:
            state = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            out.add(p)
    return out


@dataclass
class Server:
    """A running `amc serve-env`: its URL and process."""

    url: str
    proc: subprocess.Popen

    def stop(self, timeout: float = 60) -> None:
        """SIGTERM the server alone (a graceful shutdown closes its envs), then its group."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout)
        # whatever is left of the group (nothing, if the server cleaned up)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()


def start_server(name: str, options: dict[str, object], max_envs: int = 64,
                 wait_s: float = 120) -> Server:
    """`amc serve-env NAME --options-json ...` on a free port; returns once it answers."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "amc.cli", "serve-env", name, "--host", "127.0.0.1",
         "--port", str(port), "--max-envs", str(max_envs), "--options-json", json.dumps(options)],
        cwd=REPO, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    server = Server(f"http://127.0.0.1:{port}", proc)
    deadline = time.monotonic() + wait_s
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"serve-env exited: {proc.stderr.read().decode()[-2000:]}")
        try:
            if httpx.get(server.url + "/", timeout=2).status_code == 200:
                return server
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            server.stop()
            raise RuntimeError(f"serve-env {name} did not answer within {wait_s} s")
        time.sleep(0.2)


@pytest.fixture(scope="session")
def webshop_catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's generated WebShop catalog (no real data)."""
    return write_fixture_catalog(tmp_path_factory.mktemp("agentgym-webshop-catalog"))


@pytest.fixture(scope="session")
def webshop_server(webshop_catalog: Path) -> Iterator[str]:
    """`amc serve-env webshop -O data_dir=<fixture catalog>`; yields its base URL."""
    server = start_server("webshop", {"data_dir": str(webshop_catalog)})
    try:
        yield server.url
    finally:
        server.stop()


@dataclass(frozen=True)
class ProcTools:
    """What the tests need of this module (test files cannot import a conftest)."""

    start_server: Callable[..., Server] = start_server
    java_descendants: Callable[[int], set[int]] = java_descendants
    alive: Callable[[set[int]], set[int]] = alive


@pytest.fixture(scope="session")
def proc_tools() -> ProcTools:
    return ProcTools()
