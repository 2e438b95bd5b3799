"""``amc serve-env``: any registered environment over AgentGym's HTTP protocol."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from amc.cli.errors import friendly_errors
from amc.config import apply_overrides


@friendly_errors
def serve_env(
    name: Annotated[str, typer.Argument(help="Registered environment (textcraft, sciworld...).")],
    host: Annotated[str, typer.Option(help="Bind address (keep 127.0.0.1: no authentication).")]
    = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port (AgentGym's default is 36001).")] = 36001,
    max_envs: Annotated[int, typer.Option(help="Most live environments at once.")] = 256,
    allow_remote: Annotated[bool, typer.Option(
        help="Bind a non-loopback --host without the warning (the server has no auth).")]
    = False,
    option: Annotated[
        list[str] | None,
        typer.Option("--option", "-O", help="Environment option key=value (YAML value)."),
    ] = None,
    options_json: Annotated[
        str | None, typer.Option(help="Environment options as a JSON object.")
    ] = None,
) -> None:
    """Serve a registered environment over AgentGym's HTTP protocol (plus /fork)."""
    from amc.envs.agentgym.server import create_app, serve

    opts = json.loads(options_json) if options_json else {}
    if not isinstance(opts, dict):
        raise ValueError("--options-json must be a JSON object")
    opts = apply_overrides(opts, option or [])
    application = create_app(name, opts, max_envs=max_envs)
    typer.echo(f"serving environment {name!r} on http://{host}:{port}", err=True)
    serve(application, host, port, allow_remote=allow_remote)
