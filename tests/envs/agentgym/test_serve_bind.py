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


def test_serve_env_command_passes_host_and_the_flag(monkeypatch) -> None:
    """`amc serve-env --host 0.0.0.0` warns through `serve`; --allow-remote silences it."""
    from typer.testing import CliRunner

    from amc.cli import app

    runs: list[dict] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: runs.append(kw))
    r = CliRunner().invoke(app, ["serve-env", "synthetic", "--host", "0.0.0.0", "--port", "5002"])
    assert r.exit_code == 0, r.output
    assert "warning: binding 0.0.0.0:" in r.output
    r = CliRunner().invoke(app, ["serve-env", "synthetic", "--host", "0.0.0.0", "--port", "5003",
                                 "--allow-remote"])
    assert r.exit_code == 0 and "warning" not in r.output
    assert [(kw["host"], kw["port"]) for kw in runs] == [("0.0.0.0", 5002), ("0.0.0.0", 5003)]
