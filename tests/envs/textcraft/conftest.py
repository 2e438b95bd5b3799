"""Shared fixtures for environment tests: shared data paths and a live `amc serve-env`."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from amc.envs.agentgym.process import spawn_env_server

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


@pytest.fixture(scope="session")
def textcraft_server() -> Iterator[str]:
    """`amc serve-env textcraft` on a free loopback port; yields its base URL."""
    with spawn_env_server("textcraft", max_envs=64, wait_s=90, cwd=REPO) as srv:
        yield srv.url
