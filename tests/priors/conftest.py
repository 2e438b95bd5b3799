"""Shared fixtures: loopback OpenAI-compatible servers and the embedded llama.cpp server."""

from __future__ import annotations

from pathlib import Path

import pytest

from amc.priors.embedded import EmbeddedServer, llama_server_available
from tests.priors.loopback import Faults, LoopbackServer


@pytest.fixture(scope="session")
def clean_server():
    with LoopbackServer() as srv:
        yield srv


@pytest.fixture(scope="session")
def faulty_server():
    """10% faults: 4% 429 with Retry-After, 4% 500, 2% stalls past the client timeout."""
    with LoopbackServer(faults=Faults(rate_429=0.04, rate_500=0.04, rate_stall=0.02,
                                      stall_s=3.0, seed=7)) as srv:
        yield srv


@pytest.fixture(scope="session", params=["cpp", "python"])
def embedded_server(request):
    """The embedded model on each llama.cpp server that is built here (both backends)."""
    if not llama_server_available(request.param):
        pytest.skip(f"the {request.param} llama.cpp server is not built (scripts/setup.sh)")
    # The assembled GGUF lives in the repo's .cache (reused across sessions and CI steps).
    cache = Path(__file__).resolve().parents[2] / ".cache"
    with EmbeddedServer("gemma-3-270m", backend=request.param, n_ctx=4096,
                        cache_dir=cache) as srv:
        yield srv


@pytest.fixture(scope="session")
def cpp_server():
    """llama.cpp's C++ llama-server (opt-in build: AMC_LLAMA_SERVER=1 scripts/setup.sh)."""
    if not llama_server_available("cpp"):
        pytest.skip("llama-server is not built (opt-in: AMC_LLAMA_SERVER=1 scripts/setup.sh)")
    cache = Path(__file__).resolve().parents[2] / ".cache"
    with EmbeddedServer("gemma-3-270m", backend="cpp", n_ctx=4096, cache_dir=cache) as srv:
        yield srv


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    """Each test gets its own response cache (and never sees a real API key)."""
    monkeypatch.setenv("AMC_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
