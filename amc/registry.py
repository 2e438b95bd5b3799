"""Name registries: every family of components is selected by a string from config.

A registry maps a name to a factory and, optionally, to the pydantic model that validates the
factory's options, so ``{"name": "textcraft", "options": {...}}`` in ``params.yaml`` is checked
before anything is built. Unknown names fail with the list of known ones.

Families: :data:`ENVIRONMENTS` (factory returns an :class:`~amc.protocols.EnvSuite`),
:data:`PRIORS` (a :class:`~amc.protocols.Prior`), :data:`VALUES` (a
:class:`~amc.protocols.ValueFunction`). Resamplers have their own table in
:mod:`amc.smc.resampling` because they are pure functions.

Factory call convention (``Registry.build(name, options, **context)`` passes the validated
options model first, when the entry has one, then keyword context):

- environments: ``factory(options)`` -> EnvSuite
- priors: ``factory(options, *, env_name, env_options, **_)`` -> Prior
- values: ``factory(options, *, env_name, env_options, beta, prior, **_)`` -> ValueFunction
  (``prior`` is the run's prior, so LLM-backed values can share its client, retries and ledger)

Factories must accept and ignore unknown keyword context (``**_``) so that new context can be
added later. Modules register themselves on import; :func:`load_builtin_components` imports
the built-in ones lazily so that importing :mod:`amc` stays cheap.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from amc.errors import format_validation_error

T = TypeVar("T")


class UnknownNameError(KeyError):
    """A name that no registry entry has."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0])


@dataclass(frozen=True)
class Entry(Generic[T]):
    """One registered component: its factory and the model of its options."""

    name: str
    factory: Callable[..., T]
    options_model: type[BaseModel] | None
    doc: str


class Registry(Generic[T]):
    """A name -> factory table for one family of components."""

    def __init__(self, family: str) -> None:
        self.family = family
        self._entries: dict[str, Entry[T]] = {}

    def register(
        self, name: str, options: type[BaseModel] | None = None
    ) -> Callable[[Callable[..., T]], Callable[..., T]]:
        """Decorator: register ``factory`` under ``name`` with its options model."""

        def deco(factory: Callable[..., T]) -> Callable[..., T]:
            if name in self._entries and self._entries[name].factory is not factory:
                raise ValueError(f"{self.family} {name!r} is registered twice")
            doc = (factory.__doc__ or "").strip().splitlines()
            self._entries[name] = Entry(name, factory, options, doc[0] if doc else "")
            return factory

        return deco

    def names(self) -> list[str]:
        load_builtin_components()
        return sorted(self._entries)

    def entry(self, name: str) -> Entry[T]:
        load_builtin_components()
        if name not in self._entries:
            known = ", ".join(sorted(self._entries)) or "none"
            why = "".join(f"; {m} unavailable ({e})" for m, e in sorted(_unavailable.items()))
            raise UnknownNameError(f"unknown {self.family} {name!r}; known: {known}{why}")
        return self._entries[name]

    def validate(self, name: str, options: Mapping[str, Any] | None) -> BaseModel | None:
        """Validate ``options`` against the entry's model (clear error on bad fields)."""
        e = self.entry(name)
        if e.options_model is None:
            if options:
                raise ValueError(f"{self.family} {name!r} takes no options, got {sorted(options)}")
            return None
        try:
            return e.options_model.model_validate(dict(options or {}))
        except ValidationError as err:
            where = f"options for {self.family} {name!r}"
            raise ValueError(format_validation_error(err, where, root="<options>")) from None

    def build(self, name: str, options: Mapping[str, Any] | None = None, **context: Any) -> T:
        """Validate options and call the factory as ``factory(options_model, **context)``."""
        opts = self.validate(name, options)
        e = self.entry(name)
        return e.factory(opts, **context) if e.options_model is not None else e.factory(**context)


ENVIRONMENTS: Registry[Any] = Registry("environment")
PRIORS: Registry[Any] = Registry("prior")
VALUES: Registry[Any] = Registry("value function")

# Modules whose import registers built-in components. A module whose optional dependency is
# missing is skipped here; asking for its name then fails with "unknown ... known: ...".
BUILTIN_MODULES: tuple[str, ...] = (
    "amc.envs.synthetic",
    "amc.envs.textcraft.env",
    "amc.envs.agentgym.client",
    "amc.priors.random_valid",
    "amc.priors.planner_mix",
    "amc.envs.webshop.env",
    "amc.envs.sciworld.env",
    "amc.value.simple",
    "amc.priors.openai",
    "amc.priors.embedded",
    "amc.priors.hf",
    "amc.value.scorers",
    "amc.value.yesno",
    "amc.value.rollout",
    "amc.envs.textcraft.progress",
    "amc.value.remote",
)

_loaded = False
_unavailable: dict[str, str] = {}  # module -> why it could not be imported


def load_builtin_components() -> None:
    """Import the built-in component modules once (they register themselves)."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    for mod in BUILTIN_MODULES:
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as err:
            # A missing optional dependency disables that module's components only; asking
            # for one of them reports why (see Registry.entry).
            _unavailable[mod] = f"No module named {err.name!r}"
