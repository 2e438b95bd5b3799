"""The command line's error boundary: user errors become ``error: ...`` and exit status 2.

:func:`friendly_errors` wraps each command (the library's user errors);
:class:`OneLineErrors` is the application's group (click's usage errors).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import typer
from typer.core import TyperGroup

try:  # typer >= 0.2x carries its own copy of click; earlier ones use click itself
    from typer._click import exceptions as click_errors
except ImportError:  # pragma: no cover - older typer
    from click import exceptions as click_errors  # type: ignore[no-redef]

from amc.errors import USER_ERRORS, mask_secrets, user_message

F = TypeVar("F", bound=Callable[..., Any])


def friendly_errors(fn: F) -> F:
    """Wrap a command so user errors print ``error: ...`` and exit with status 2."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except USER_ERRORS as err:
            typer.echo(f"error: {mask_secrets(user_message(err))}", err=True)
            raise typer.Exit(2) from None

    return wrapper  # type: ignore[return-value]


class OneLineErrors(TyperGroup):
    """The application's group: click's own usage errors (an unknown option, a value that is
    not a number, a missing argument) also print as one ``error: ...`` line, exit status 2.

    Typer would print the usage, a hint and a boxed message; every other error of the command
    line is one line, so these are too. ``amc`` alone (or a group alone) still prints the help.
    """

    def make_context(self, info_name: str | None, args: list[str],
                     parent: Any = None, **extra: Any) -> Any:
        with one_line():
            return super().make_context(info_name, args, parent, **extra)

    def invoke(self, ctx: Any) -> Any:
        with one_line():  # a subcommand parses its arguments in here
            return super().invoke(ctx)


@contextlib.contextmanager
def one_line() -> Iterator[None]:
    """A click error inside becomes ``error: <message>`` on stderr and its exit status."""
    try:
        yield
    except click_errors.ClickException as err:
        if type(err).__name__ == "NoArgsIsHelpError":  # a bare group: its help
            raise
        typer.echo(f"error: {' '.join(err.format_message().split())}", err=True)
        raise typer.Exit(err.exit_code) from None
