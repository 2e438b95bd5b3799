"""The command line's error boundary: user errors become ``error: ...`` and exit status 2.

:func:`friendly_errors` wraps each command (the library's user errors, and a package of an
extra the core install lacks: one line naming the extra, :func:`missing_extra`);
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

EXTRAS = {**dict.fromkeys(("torch", "transformers", "datasets", "safetensors", "peft",
                           "accelerate", "scipy", "matplotlib"), "value"),
          **dict.fromkeys(("mlflow", "prefect", "dvc"), "pipeline"),
          "scienceworld": "sciworld", "bm25s": "webshop", "Stemmer": "webshop",
          "thefuzz": "webshop", "gguf": "llama", "trl": "grpo", "dask": "scale",
          "prefect_dask": "scale"}
"""Top-level module -> the extra of ``pyproject.toml`` that installs it."""

EXTRAS_HELP = (
    "The core install (pip install amc) runs run, serve-env, serve-prior, prior-info and fetch. "
    "dataset, train, value-auc, collect, evaluate, promote, report, results-doc and calibrate "
    "need the pipeline extra: pip install 'amc\\[pipeline]'; grpo and sft need "
    "'amc\\[grpo,pipeline]'.")
"""The application's epilog: which commands need which extra (``\\[``: rich markup's escape)."""


def missing_extra(err: ModuleNotFoundError) -> str | None:
    """One line naming the extra that installs the missing module (None: not an extra's)."""
    top = (err.name or "").split(".")[0]
    extra = EXTRAS.get(top)
    if extra is None:
        return None
    return (f"this command needs {top}, which the core install leaves out: "
            f"pip install 'amc[{extra}]'")


def friendly_errors(fn: F) -> F:
    """Wrap a command so user errors print ``error: ...`` and exit with status 2."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except USER_ERRORS as err:
            typer.echo(f"error: {mask_secrets(user_message(err))}", err=True)
            raise typer.Exit(2) from None
        except ModuleNotFoundError as err:
            line = missing_extra(err)
            if line is None:
                raise
            typer.echo(f"error: {line}", err=True)
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
        plain_flags(self)
        with one_line():
            return super().make_context(info_name, args, parent, **extra)

    def get_help_option(self, ctx: Any) -> Any:
        return _plain(super().get_help_option(ctx))

    def invoke(self, ctx: Any) -> Any:
        with one_line():  # a subcommand parses its arguments in here
            return super().invoke(ctx)


def _plain(option: Any) -> Any:
    """A flag (``--quiet``, ``--help``) shows no value type in the help (typer's rich help
    would print ``--help <bool>``, as if it took one)."""
    if option is not None and getattr(option, "is_flag", False) \
            and not getattr(option, "count", False):
        option.metavar = ""
    return option


def plain_flags(command: Any) -> None:
    """:func:`_plain` on every flag of ``command`` and of its subcommands, and their help."""
    for param in getattr(command, "params", ()):
        _plain(param)
    for sub in getattr(command, "commands", {}).values():
        plain_flags(sub)
        if not isinstance(sub, OneLineErrors):
            get = sub.get_help_option
            sub.get_help_option = lambda ctx, get=get: _plain(get(ctx))


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
