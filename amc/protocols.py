"""The three components AMC is assembled from: an environment, a prior and a value function.

The SMC driver (:mod:`amc.smc.sampler`) only orchestrates; everything that is specific to a
benchmark or a model lives behind one of these protocols, each selected by name from a
registry (:mod:`amc.registry`):

- :class:`Environment` -- one episode of a benchmark. ``fork()`` must return an *independent*
  copy: stepping the fork never changes its parent (resampled particles each own one).
  An environment may also offer ``final_action() -> str | None``: an action the driver applies
  to every unfinished particle after the last step, identically for every method (WebShop's
  forced ``click[buy now]``).
- :class:`EnvSuite` -- what a registry entry builds: makes environments and lists task ids.
- :class:`Prior` -- the frozen black-box agent. It only ever *samples*; AMC never needs its
  density, which is what makes the method black-box.
- :class:`ValueFunction` -- f(s), the predicted future reward after state s (the paper's
  parameterisation V(s) = f(s) + r(s)); batched over many particle states.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from amc.types import AgentTurn, EnvStep, History


@runtime_checkable
class Environment(Protocol):
    """One episode of a benchmark.

    ``io_bound`` tells the driver to run ``step``/``fork`` in a worker thread (HTTP clients,
    simulators); in-process environments that step in microseconds leave it ``False``.
    """

    io_bound: bool

    def reset(self, task_id: str) -> str:
        """Start the task ``task_id`` and return the initial observation."""
        ...

    def step(self, action: str) -> EnvStep:
        """Execute ``action``. Invalid actions give an error observation and reward 0."""
        ...

    def fork(self) -> Environment:
        """An independent copy of the current episode state."""
        ...

    def valid_actions(self) -> list[str] | None:
        """Actions that can succeed now, or ``None`` if the environment cannot enumerate them."""
        ...

    def close(self) -> None:
        """Release the episode's resources (idempotent)."""
        ...


@runtime_checkable
class EnvSuite(Protocol):
    """A configured benchmark: a factory of environments plus its task ids."""

    name: str

    def make(self) -> Environment:
        """A new, not yet reset, environment."""
        ...

    def task_ids(self, split: str) -> list[str]:
        """Task ids of ``split`` (e.g. ``"train"``, ``"test"``), in a deterministic order."""
        ...

    def close(self) -> None:
        """Release shared resources (catalogues, simulator pools, servers)."""
        ...


@runtime_checkable
class Prior(Protocol):
    """The black-box agent: samples one turn given a particle's history.

    ``rng`` is the particle's own generator for this step; a prior draws any seed it sends to
    a server from it, so results never depend on which concurrent call finishes first.
    """

    async def propose(self, history: History, rng: np.random.Generator) -> AgentTurn:
        """Sample one agent turn (raw text, parsed action, usage)."""
        ...

    async def aclose(self) -> None:
        """Release clients and servers."""
        ...


@runtime_checkable
class ValueFunction(Protocol):
    """f(s): predicted future reward after each state, for many particle states at once.

    A value that makes paid calls (an LLM judge) may also offer ``async score_with_usage(
    histories) -> (values, Usage)``; the driver then bills those calls to the task.
    """

    async def score(self, histories: Sequence[History]) -> list[float]:
        """One value per history, in order."""
        ...

    async def aclose(self) -> None:
        """Release models, clients and servers."""
        ...
