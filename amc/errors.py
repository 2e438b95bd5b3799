"""User errors, formatted in one place.

A *user error* is bad input (a wrong name, option, file or YAML text): the command line shows it
as one ``error: ...`` line with exit status 2 instead of a traceback. Library code raises the
ordinary exceptions listed in :data:`USER_ERRORS`; pydantic's validation errors become one
readable line through :func:`format_validation_error`. A server the run needs that cannot be
reached, or that refuses the run's first requests, is a :class:`ServiceUnavailable` (a user
error too: the address or the server is wrong, not the program).
"""

from __future__ import annotations

import yaml
from pydantic import ValidationError


class ServiceUnavailable(RuntimeError):
    """A server the run depends on (an environment server, say) is unreachable or refused a
    request; raised where the component talks to it, shown as one line when it ends a command."""


USER_ERRORS: tuple[type[BaseException], ...] = (
    ValueError, KeyError, FileNotFoundError, NotADirectoryError, IsADirectoryError,
    PermissionError, yaml.YAMLError, ServiceUnavailable,
)
"""Exceptions that mean "the user asked for something wrong" (shown as one line, exit 2)."""


def format_validation_error(err: ValidationError, where: str, root: str = "<root>") -> str:
    """``bad <where>: a.b: msg; c: msg`` from a pydantic error (one line, every field)."""
    msgs = "; ".join(f"{'.'.join(map(str, e['loc'])) or root}: "
                     f"{e['msg'].removeprefix('Value error, ')}" for e in err.errors())
    return f"bad {where}: {msgs}"


def user_message(err: BaseException) -> str:
    """The one-line text of a user error (KeyError quotes its argument; YAML spans lines)."""
    if isinstance(err, KeyError) and err.args:
        return str(err.args[0])
    if isinstance(err, yaml.YAMLError):
        return "invalid YAML: " + " ".join(str(err).split())
    return str(err)
