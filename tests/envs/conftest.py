"""Shared fixtures for environment tests: one small SciWorld simulator pool per session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from amc.envs.sciworld import SciWorldOptions, SciWorldSuite


@pytest.fixture(scope="session")
def sciworld() -> Iterator[SciWorldSuite]:
    """A SciWorld suite with at most 3 JVMs (about 1 GB), closed at the end of the session."""
    suite = SciWorldSuite(SciWorldOptions(pool_size=3))
    yield suite
    suite.close()
