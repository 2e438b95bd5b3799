"""User errors, formatted in one place.

A *user error* is bad input (a wrong name, option, file or YAML text): the command line shows it
as one ``error: ...`` line with exit status 2 instead of a traceback. Library code raises the
ordinary exceptions listed in :data:`USER_ERRORS`; pydantic's validation errors become one
readable line through :func:`format_validation_error`. A server the run needs that cannot be
reached, or that refuses the run's first requests, is a :class:`ServiceUnavailable` (a user
error too: the address or the server is wrong, not the program).

Secrets are masked where text is persisted (:func:`mask_secrets`: results, failures, the
response cache, MLflow params and tags, log records): the values of the environment's key
variables (:data:`SECRET_ENV`, and each component's ``api_key_env``) and any
``Authorization``/``api-key`` header value, e.g. one a hostile endpoint echoes in its answer.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable
from typing import Any

import yaml
from pydantic import ValidationError


class ServiceUnavailable(RuntimeError):
    """A server the run depends on (an environment server, say) is unreachable or refused a
    request; raised where the component talks to it, shown as one line when it ends a command."""


class ComponentError(ValueError):
    """A component refused to be built from its options; ``component``: which (``env``,
    ``prior``, ``value``, ``selection_value``), so a command can name the flag that set it."""

    def __init__(self, component: str, err: BaseException) -> None:
        super().__init__(user_message(err))
        self.component = component


class LimitExceeded(ValueError):
    """A run past one of its size limits (``limits.*``); ``method``: the method whose N is
    too large (None: the run's total size)."""

    def __init__(self, message: str, method: str | None = None) -> None:
        super().__init__(message)
        self.method = method


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


# -- secrets: masked in everything the project persists ------------------------------------
SECRET_ENV = re.compile(r"(^|_)(API_KEY|KEY|TOKEN|SECRET|PASSWORD)$", re.IGNORECASE)
"""Environment variables whose values are secrets (``OPENAI_API_KEY``, ``HF_TOKEN``...)."""
MIN_SECRET = 8
"""Shorter values are not masked (a 3-character "key" would mangle every text holding it)."""
MASK = "***"
_named: set[str] = set()
_HEADER = re.compile(r"(?i)\b(authorization|x-api-key|api-key)(\\?[\"']?\s*[:=]\s*\\?[\"']?)"
                     r"((?:bearer|basic|token)\s+)?[^\s\"',;}\\]+")
_BEARER = re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}")


def register_secret_env(name: str | None) -> None:
    """Treat the value of environment variable ``name`` as a secret (a component's
    ``api_key_env``), whatever its name."""
    if name:
        _named.add(name)


def known_secrets() -> list[str]:
    """The secret values in the environment now (longest first, so none is half masked)."""
    vals = {v for k, v in os.environ.items()
            if (k in _named or SECRET_ENV.search(k)) and len(v.strip()) >= MIN_SECRET}
    return sorted(vals, key=len, reverse=True)


def mask_secrets(text: str) -> str:
    """``text`` with every known secret (also JSON-escaped), and any ``Authorization`` /
    ``api-key`` header value or bearer token, replaced by ``***``."""
    for secret in known_secrets():
        text = text.replace(secret, MASK)
        text = text.replace(json.dumps(secret)[1:-1], MASK)
    text = _HEADER.sub(lambda m: f"{m[1]}{m[2]}{m[3] or ''}{MASK}", text)
    return _BEARER.sub(f"Bearer {MASK}", text)


class _MaskedRecords:
    """A log record factory that masks secrets in each record's message."""

    def __init__(self, inner: Callable[..., logging.LogRecord]) -> None:
        self.inner = inner

    def __call__(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
        rec = self.inner(*args, **kwargs)
        try:
            msg = rec.getMessage()
        except Exception:  # a malformed record: logging's to report
            return rec
        masked = mask_secrets(msg)
        if masked != msg:
            rec.msg, rec.args = masked, ()
        return rec


def mask_logs() -> None:
    """Mask secrets in every log record of this process from now on (idempotent)."""
    factory = logging.getLogRecordFactory()
    if not isinstance(factory, _MaskedRecords):
        logging.setLogRecordFactory(_MaskedRecords(factory))
