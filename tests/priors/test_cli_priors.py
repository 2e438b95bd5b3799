import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from amc.ports import free_port
from amc.priors.embedded import llama_server_available

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_serve_prior_serves_on_loopback_and_stops_on_sigterm():
    if not llama_server_available():
        pytest.skip("llama-cpp-python[server] is not installed")
    port = free_port()
    env = {**os.environ, "AMC_CACHE": str(ROOT / ".cache")}
    proc = subprocess.Popen(
        [sys.executable, "-c", "from amc.cli import app; app()", "serve-prior", "--port",
         str(port)], cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        assert line.strip() == f"serving gemma-3-270m at http://127.0.0.1:{port}/v1"
        assert httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=5).status_code == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    time.sleep(0.5)
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=2)


def test_serve_prior_unknown_model_is_a_one_line_error():
    out = subprocess.run(
        [sys.executable, "-c", "from amc.cli import app; app()", "serve-prior", "--model", "gpt"],
        cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert out.stderr.strip().startswith("error: unknown embedded model 'gpt'")


def test_prior_info_lists_priors_and_prices():
    out = subprocess.run([sys.executable, "-c", "from amc.cli import app; app()", "prior-info"],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "prior openai" in out.stdout and "prior embedded" in out.stdout
    assert "gpt-4.1-mini" in out.stdout and "table 2025-11" in out.stdout
