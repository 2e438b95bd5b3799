"""The ``amc`` command line: thin commands over library functions.

:mod:`amc.cli.main` builds the one ``app`` and attaches the commands of each area's module
(:mod:`.run`, :mod:`.envs`, :mod:`.fetch`, :mod:`.priors`, :mod:`.value`, :mod:`.pipeline`);
:mod:`amc.cli.errors` turns bad input into a one-line ``error:`` (exit status 2). This package
file imports nothing at import time, so a command module importing :mod:`amc.cli.errors` never
re-enters :mod:`amc.cli.main` (no import circle); ``from amc.cli import app`` resolves lazily.
"""

from __future__ import annotations

import importlib
from typing import Any


def __getattr__(name: str) -> Any:
    if name == "app":
        return importlib.import_module("amc.cli.main").app
    raise AttributeError(f"module 'amc.cli' has no attribute {name!r}")
