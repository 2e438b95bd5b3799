"""TextCraft fixtures: the benchmark's files in the reference data, and a live `amc serve-env`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from amc.envs.agentgym.process import spawn_env_server

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def recipes_dir(shared_data: Path) -> Path:
    """The datapack recipes in the reference data (the fidelity tests skip without them)."""
    d = shared_data / "textcraft-recipes"
    if not d.is_dir():
        pytest.skip(f"datapack recipes not present at {d}")
    return d


@pytest.fixture(scope="session")
def splits_dir(shared_data: Path) -> Path:
    """The paper's TextCraft split files in the reference data (skip without them)."""
    d = shared_data / "splits"
    if not (d / "textcraft_crafting_depths.csv").is_file():
        pytest.skip(f"TextCraft split files not present in {d}")
    return d


@pytest.fixture(scope="session")
def textcraft_server() -> Iterator[str]:
    """`amc serve-env textcraft` on a free loopback port; yields its base URL."""
    with spawn_env_server("textcraft", max_envs=64, wait_s=90, cwd=REPO) as srv:
        yield srv.url
