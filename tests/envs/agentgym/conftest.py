"""Fixtures for the AgentGym client against live `amc serve-env` servers (WebShop, SciWorld).

Each server is a subprocess on a free loopback port, in its own session (process group) so a
leftover can always be killed; :func:`java_descendants` lists the JVMs under a process (read
from /proc) so the SciWorld tests can check that none outlives its server.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from amc.envs.agentgym.process import ServerProcess, spawn_env_server
from amc.envs.webshop.fixture import write_fixture_catalog

REPO = Path(__file__).resolve().parents[3]


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


Server = ServerProcess


def start_server(name: str, options: dict[str, object], max_envs: int = 64,
                 wait_s: float = 120) -> Server:
    """`amc serve-env NAME --options-json ...` on a free port; returns once it answers."""
    return spawn_env_server(name, options, max_envs=max_envs, wait_s=wait_s, cwd=REPO)


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
