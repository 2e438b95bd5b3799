"""`serve`: an unauthenticated environment server says so when it binds beyond loopback."""

from __future__ import annotations

import pytest
import uvicorn
from fastapi import FastAPI

from amc.envs.agentgym.server import bind_warning, serve


@pytest.mark.parametrize(("host", "warns"), [
    ("127.0.0.1", False), ("127.0.0.2", False), ("::1", False), ("[::1]", False),
    ("localhost", False), ("0.0.0.0", True), ("::", True), ("192.168.1.5", True),
    ("build-box.example", True),
])
def test_bind_warning_only_beyond_loopback(host: str, warns: bool) -> None:
    msg = bind_warning(host)
    assert (msg is not None) == warns
    if msg:
        assert host in msg and "\n" not in msg and "no authentication" in msg


def test_serve_warns_on_every_interface_unless_intended(monkeypatch, capsys) -> None:
    runs: list[dict] = []  # uvicorn.run is the network boundary: record instead of binding
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: runs.append(kw))
    app = FastAPI()
    serve(app, "0.0.0.0", 5000)
    assert capsys.readouterr().err.startswith("warning: binding 0.0.0.0:")
    serve(app, "127.0.0.1", 5001)
    serve(app, "0.0.0.0", 5002, allow_remote=True)
    assert capsys.readouterr().err == ""
    assert [(r["host"], r["port"]) for r in runs] == [
        ("0.0.0.0", 5000), ("127.0.0.1", 5001), ("0.0.0.0", 5002)]
