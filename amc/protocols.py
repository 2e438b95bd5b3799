"""The three components AMC is assembled from: an environment, a prior and a value function.

The SMC driver (:mod:`amc.smc.sampler`) only orchestrates; everything that is specific to a
benchmark or a model lives behind one of these protocols, each selected by name from a
registry (:mod:`amc.registry`):

- :class:`Environment` -- one episode of a benchmark. ``fork()`` must return an *independent*
  copy: stepping the fork never changes its parent (resampled particles each own one).
- :class:`EnvSuite` -- what a registry entry builds: makes environments and lists task ids.
- :class:`Prior` -- the frozen black-box agent. It only ever *samples*; AMC never needs its
  density, which is what makes the method black-box.
- :class:`ValueFunction` -- f(s), the predicted future reward after state s (the paper's
  parameterisation V(s) = f(s) + r(s)); batched over many particle states.

**Optional abilities.** A component may offer more than its protocol requires. Each such
ability is declared below as a small runtime-checkable protocol, with the default that applies
to a component without it. A class that has an ability inherits its protocol explicitly
(``class WebShopEnv(ForcesFinalAction)``), so the ability shows in its definition and type
checkers verify the signature. The driver never probes attribute names: it checks
``isinstance(component, Ability)`` against the declared protocol and otherwise applies the
default. Structural implementations that do not inherit (test doubles, outside code) work too.

- :class:`ForcesFinalAction` (environment): ``final_action()``; default: nothing is forced.
- :class:`WantsValidActions` (prior): ``wants_valid_actions``; default: no action menu.
- :class:`ReportsUsage` (value): ``async score_with_usage()``; default: ``score()``, no usage.
- :class:`CompletionClient` (prior): ``async complete(prompt)``; no default: the LLM values
  (zero-shot, FoA) need it and fail to build with a prior that lacks it.
- :class:`NextTokenLogprobs` (prior): ``async next_token_logprobs(prompt, top=)``; no default:
  the yes/no zero-shot value reads the answer's probability from it and fails to build without.
- :class:`BoundedEpisodes` (suite): ``horizon``, the most steps any episode lasts; default:
  unbounded (only the step budget ends an episode).
- :class:`RestoresHistory` (environment): ``restore(history)``, a new environment put in a
  recorded history's state, to be forked from there; default: the state is only rebuilt by
  replaying the actions in process (:class:`~amc.envs.replay.ReplayCache`), which an I/O-bound
  environment refuses.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from amc.types import AgentTurn, EnvStep, History, Usage


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
    A turn with ``error`` set means the prior failed for good on this particle: the driver
    retires the particle as a failure (weight zero, recorded in ``TaskResult.failures``).
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

    Values must be finite: the driver rejects NaN and infinities with an error naming the
    value model and the state (a finite value is a prediction; an infinite one is a bug).
    """

    async def score(self, histories: Sequence[History]) -> list[float]:
        """One value per history, in order."""
        ...

    async def aclose(self) -> None:
        """Release models, clients and servers."""
        ...


# ---------------------------------------------------------------- optional abilities


@runtime_checkable
class ForcesFinalAction(Protocol):
    """An environment with an action forced after the agent's last step (WebShop's buy).

    The driver steps it once on every unfinished particle after the last step, identically
    for every method, with no agent turn recorded. Default: nothing is forced.
    """

    def final_action(self) -> str | None:
        """The forced action now, or ``None`` (e.g. the episode is over)."""
        ...


@runtime_checkable
class WantsValidActions(Protocol):
    """A prior whose prompt lists the actions valid now (action-menu prompts).

    When ``wants_valid_actions`` is true the driver attaches ``env.valid_actions()`` to the
    history before each proposal. Default: no menu (the environment is not asked).
    """

    @property
    def wants_valid_actions(self) -> bool:
        """Whether to attach the valid actions (a class attribute is fine)."""
        ...


@runtime_checkable
class ReportsUsage(Protocol):
    """A value that makes paid calls (an LLM judge) and reports what they cost.

    The driver bills the usage to the task, so a task's tokens include its value calls.
    Default: ``score()`` with zero usage.
    """

    async def score_with_usage(self, histories: Sequence[History]
                               ) -> tuple[list[float], Usage]:
        """One value per history, in order, and the usage of the calls that made them."""
        ...


@runtime_checkable
class CompletionClient(Protocol):
    """A prior that also serves raw completions, so LLM values can share its client.

    The zero-shot and FoA values call the run's prior through it (same server, retries and
    ledger). No default: building such a value with a prior lacking it is a clear error.
    """

    async def complete(self, prompt: str) -> tuple[str, Usage]:
        """The model's text answer to ``prompt`` and what it cost."""
        ...


@runtime_checkable
class NextTokenLogprobs(Protocol):
    """A prior that returns the log-probabilities of the next token's most likely candidates.

    A value can then read what a base model believes (the probability of `` Yes`` after a
    question) instead of parsing the text it samples. Served by the completion endpoint's
    ``logprobs`` (OpenAI-compatible servers, llama.cpp). No default: building a value that needs
    it with a prior lacking it is a clear error.
    """

    async def next_token_logprobs(self, prompt: str, *, top: int = 20
                                  ) -> tuple[dict[str, float], Usage]:
        """``{token text: natural-log probability}`` of the ``top`` most likely next tokens
        after ``prompt`` (as the model's tokenizer writes them, e.g. `` Yes``) and the cost."""
        ...


@runtime_checkable
class BoundedEpisodes(Protocol):
    """A suite whose episodes all end within ``horizon`` steps (the synthetic tree's depth).

    ``amc run`` refuses fixed resampling steps at or past it up front: no particle is alive
    there, so such a method would silently equal Best-of-N. Default: unbounded.
    """

    @property
    def horizon(self) -> int:
        """The most steps an episode of this suite can last."""
        ...


@runtime_checkable
class RestoresHistory(Protocol):
    """An environment that can be put in a recorded history's state, then forked from there.

    A value that needs the *state* of a particle it only sees as a history (the rollout
    value) restores a new environment of the suite and forks it once per rollout, instead of
    replaying the history in process -- which I/O-bound environments (a JVM simulator) cannot
    do in the event loop. The result must be the state ``reset(history.task_id)`` and the
    history's actions would give; an environment may defer the work to its next use (the
    fork), but must then check the history against what it rebuilds and raise on a mismatch.
    Default: no restore (the state is replayed in process, in-process environments only).
    """

    def restore(self, history: History) -> None:
        """Put this new (never reset) environment in the state after ``history``."""
        ...
