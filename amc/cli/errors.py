"""The command line's error boundary: user errors become ``error: ...`` and exit status 2."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import typer

from amc.errors import USER_ERRORS, user_message

F = TypeVar("F", bound=Callable[..., Any])


def friendly_errors(fn: F) -> F:
    """Wrap a command so user errors print ``error: ...`` and exit with status 2."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except USER_ERRORS as err:
            typer.echo(f"error: {user_message(err)}", err=True)
            raise typer.Exit(2) from None

    return wrapper  # type: ignore[return-value]
