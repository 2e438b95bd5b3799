"""``amc serve-prior``: keep the embedded model's llama.cpp server running between runs.

Runs started with ``-S prior.options.base_url=<url>`` attach to it instead of starting their
own server (no model load per run). The server binds 127.0.0.1 only and is stopped, with its
whole process group, on Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import signal
import time
from types import FrameType

import typer

from amc.cli.errors import friendly_errors


@friendly_errors
def serve_prior(
    model: str = typer.Option("gemma-3-270m", help="Embedded model: gemma-3-270m or smollm2-135m."),
    port: int = typer.Option(0, help="Port on 127.0.0.1 (0 = a free one)."),
    n_ctx: int = typer.Option(4096, help="Context length in tokens."),
    n_threads: int = typer.Option(0, help="CPU threads (0 = up to 4)."),
) -> None:
    """Serve the embedded prior model on 127.0.0.1 until interrupted."""
    from amc.priors.embedded import EmbeddedServer

    def stop(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    server = EmbeddedServer(model, port=port or None, n_ctx=n_ctx, n_threads=n_threads or None)
    with server:
        typer.echo(f"serving {model} at {server.url}", err=True)
        typer.echo(f"attach with: -S prior.name=embedded -S prior.options.base_url={server.url}",
                   err=True)
        try:
            while server.proc is not None and server.proc.poll() is None:
                time.sleep(0.5)
        except KeyboardInterrupt:
            typer.echo("stopping", err=True)
            return
    raise ValueError(f"llama.cpp server exited unexpectedly; see {server.log_path}")


@friendly_errors
def prior_info() -> None:
    """List the priors, the embedded models, the llama.cpp build status and the price table."""
    from amc.priors.embedded import MODELS, llama_server_available
    from amc.priors.ledger import PRICE_TABLE_VERSION, PRICES
    from amc.registry import PRIORS

    for name in PRIORS.names():
        typer.echo(f"prior {name:<10} {PRIORS.entry(name).doc}")
    build = "installed" if llama_server_available() else "missing (run scripts/setup.sh)"
    typer.echo(f"llama.cpp server: {build}; embedded models: {', '.join(MODELS)}")
    typer.echo(f"prices (USD per 1M tokens, table {PRICE_TABLE_VERSION}):")
    for model, p in PRICES.items():
        typer.echo(f"  {model:<14} in {p.input:>6.3f}  cached {p.cached_input:>6.3f}  "
                   f"out {p.output:>6.3f}")
