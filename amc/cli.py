"""The ``amc`` command line: thin commands over library functions.

Commands of each area live in their own module (``amc/cli_*.py``) and attach themselves to
:data:`app`; this module imports them at the bottom. Every command turns bad input into a
one-line error (exit code 2) instead of a traceback.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import typer

app = typer.Typer(
    name="amc",
    help="Agentic Monte Carlo: steer black-box LLM agents with SMC and a learned value.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

F = TypeVar("F", bound=Callable[..., Any])


@app.callback()
def _root() -> None:
    """Agentic Monte Carlo: steer black-box LLM agents with SMC and a learned value."""

# Exceptions that mean "the user asked for something wrong", shown as one line.
USER_ERRORS: tuple[type[BaseException], ...] = (ValueError, KeyError, FileNotFoundError)


def friendly_errors(fn: F) -> F:
    """Wrap a command so user errors print ``error: ...`` and exit with status 2."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except USER_ERRORS as err:
            msg = err.args[0] if isinstance(err, KeyError) and err.args else err
            typer.echo(f"error: {msg}", err=True)
            raise typer.Exit(2) from None

    return wrapper  # type: ignore[return-value]


def main() -> None:  # pragma: no cover - console entry point
    app(prog_name="amc")


# Command modules (each registers its commands on `app`).
from amc import (  # noqa: E402,F401
    cli_envs,
    cli_priors,
    cli_run,
    cli_value,
    cli_webshop,
)

if __name__ == "__main__":  # pragma: no cover - `python -m amc.cli`: use the imported module
    from amc.cli import main as _main  # (this file runs as __main__, a second module object)

    sys.exit(_main())
