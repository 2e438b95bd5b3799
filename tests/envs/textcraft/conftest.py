"""Shared fixtures for environment tests: shared data paths and a live `amc serve-env`."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

REPO = Path(__file__).resolve().parents[3]
# <repo>/../shared/data as in CI; AMC_SHARED=<dir> overrides it (e.g. for a worktree elsewhere)
SHARED_DATA = Path(os.environ.get("AMC_SHARED", REPO.parent / "shared")) / "data"
RECIPES_DIR = SHARED_DATA / "textcraft-recipes"
SPLITS_DIR = SHARED_DATA / "splits"



@pytest.fixture(scope="session")
def recipes_dir() -> Path:
    """The datapack recipes in ../shared/data (the fidelity tests skip without them)."""
    if not RECIPES_DIR.is_dir():
        pytest.skip(f"datapack recipes not present at {RECIPES_DIR}")
    return RECIPES_DIR


@pytest.fixture(scope="session")
def splits_dir() -> Path:
    """The paper's TextCraft split files in ../shared/data/splits (skip without them)."""
    if not (SPLITS_DIR / "textcraft_crafting_depths.csv").is_file():
        pytest.skip(f"TextCraft split files not present in {SPLITS_DIR}")
    return SPLITS_DIR


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def textcraft_server() -> Iterator[str]:
    """`amc serve-env textcraft` on a free loopback port; yields its base URL."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "amc.cli", "serve-env", "textcraft", "--host", "127.0.0.1",
         "--port", str(port), "--max-envs", "64"],
        cwd=REPO, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"serve-env exited: {proc.stderr.read().decode()[-2000:]}")
            try:
                if httpx.get(url + "/", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("serve-env did not answer within 90 s")
            time.sleep(0.2)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
