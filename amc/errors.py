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
Every configured secret is masked whatever its length: one of :data:`MIN_SECRET` characters
or more wherever it appears, a shorter one wherever it stands as a whole token (``abc`` in
``key abc.`` but not in ``fabric``), and in JSON text (:func:`mask_json`) only inside string
values, so a persisted file stays valid JSON. A value that is a bare number or a yes/no word
(``SOME_TOKEN=1``) is a setting, not a key, and is left alone.
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
    """``bad <where>: a.b: msg; c: msg`` from a pydantic error (one line, every field; no
    ``bad <where>:`` when ``where`` is empty, so the line starts with the key). A message that
    names its own key (``a.b.c: ...`` under ``a.b``) is not prefixed twice."""
    msgs = []
    for e in err.errors():
        loc, msg = ".".join(map(str, e["loc"])) or root, e["msg"].removeprefix("Value error, ")
        own = msg.startswith(f"{loc}.") or (not e["loc"] and not where)  # names its key
        msgs.append(msg if own else f"{loc}: {msg}")
    return f"bad {where}: {'; '.join(msgs)}" if where else "; ".join(msgs)


def user_message(err: BaseException) -> str:
    """The one-line text of a user error (KeyError quotes its argument; YAML spans lines)."""
    if isinstance(err, KeyError) and err.args:
        return str(err.args[0])
    if isinstance(err, yaml.YAMLError):
        return "invalid YAML: " + " ".join(str(err).split())
    if isinstance(err, ValidationError):  # a model built in code: one line, never pydantic's
        return format_validation_error(err, err.title)
    return str(err)


# -- secrets: masked in everything the project persists ------------------------------------
SECRET_ENV = re.compile(r"(^|_)(API_KEY|KEY|TOKEN|SECRET|PASSWORD)$", re.IGNORECASE)
"""Environment variables whose values are secrets (``OPENAI_API_KEY``, ``HF_TOKEN``...)."""
MIN_SECRET = 8
"""Secrets this long or longer are masked anywhere; shorter ones only as whole tokens."""
MASK = "***"
_SETTING = re.compile(r"(?i)[+-]?\d+(\.\d*)?|true|false|yes|no|on|off|none|null")
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"(\s*:)?')
"""A JSON string (group 1: the ``:`` that makes it a key)."""
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
    """The secret values in the environment now, whatever their length (longest first, so
    none is half masked); bare numbers and yes/no words are settings, not secrets."""
    vals = {v for k, v in os.environ.items()
            if (k in _named or SECRET_ENV.search(k)) and v.strip()
            and not _SETTING.fullmatch(v.strip())}
    return sorted(vals, key=len, reverse=True)


def _token(secret: str) -> re.Pattern[str]:
    """``secret`` (and its JSON-escaped form) where it stands as a whole token."""
    forms = {re.escape(secret), re.escape(json.dumps(secret)[1:-1])}
    return re.compile(r"(?<![\w.-])(?:" + "|".join(sorted(forms, key=len, reverse=True))
                      + r")(?![\w-])")


def _mask_known(text: str, secrets: list[str], short: bool) -> str:
    """``text`` with the long ``secrets`` replaced (and, if ``short``, the short ones)."""
    for secret in secrets:
        if len(secret) >= MIN_SECRET:
            text = text.replace(secret, MASK).replace(json.dumps(secret)[1:-1], MASK)
        elif short:
            text = _token(secret).sub(MASK, text)
    return text


def _mask_headers(text: str) -> str:
    text = _HEADER.sub(lambda m: f"{m[1]}{m[2]}{m[3] or ''}{MASK}", text)
    return _BEARER.sub(f"Bearer {MASK}", text)


def mask_secrets(text: str) -> str:
    """``text`` with every known secret (also JSON-escaped; a short one as a whole token),
    and any ``Authorization`` / ``api-key`` header value or bearer token, replaced by
    ``***``."""
    return _mask_headers(_mask_known(text, known_secrets(), short=True))


def mask_json(text: str) -> str:
    """:func:`mask_secrets` for JSON text: a short secret is masked only inside string
    values, so numbers, literals and keys stay as they are and the text stays valid JSON."""
    secrets = known_secrets()
    text = _mask_headers(_mask_known(text, secrets, short=False))
    short = [s for s in secrets if len(s) < MIN_SECRET]
    if any(x in text for s in short for x in (s, json.dumps(s)[1:-1])):  # a string holds one
        text = _JSON_STRING.sub(lambda m: m[0] if m[1] else _mask_known(m[0], short, True),
                                text)
    return text


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
