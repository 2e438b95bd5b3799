"""A prior that picks uniformly among the environment's valid actions (no model needed).

It lets ``amc run`` work offline on any environment that enumerates its actions (TextCraft,
the synthetic tree), e.g. ``amc run --env textcraft --prior random-valid``: a floor for the
methods and a smoke test of the whole pipeline. An environment that cannot list its actions
(``valid_actions()`` is None, e.g. SciWorld over an upstream server) is an error, not a run of
``[invalid action]`` steps. Registered as prior ``random-valid``.
"""

from __future__ import annotations

import numpy as np

from amc.protocols import WantsValidActions
from amc.registry import PRIORS
from amc.types import INVALID_ACTION, AgentTurn, History, Usage


class NoValidActionsError(RuntimeError):
    """A prior that needs the environment's valid actions got none (they cannot be listed)."""


class RandomValidPrior(WantsValidActions):
    """Uniform over ``history.valid_actions`` (the driver attaches them before each call)."""

    wants_valid_actions = True

    async def propose(self, history: History, rng: np.random.Generator) -> AgentTurn:
        if history.valid_actions is None:  # the env cannot list them: never guess silently
            raise NoValidActionsError(
                "prior random-valid needs the environment's valid actions, but it lists none "
                "(valid_actions() is None); use a model prior or an environment that lists them"
            )
        menu = history.valid_actions
        if not menu:
            return AgentTurn(raw_text="", action=INVALID_ACTION, usage=Usage(calls=1))
        action = menu[int(rng.integers(len(menu)))]
        return AgentTurn(raw_text=f"Action: {action}", action=action, usage=Usage(calls=1))

    async def aclose(self) -> None:
        pass


@PRIORS.register("random-valid")
def make_random_valid_prior(**_: object) -> RandomValidPrior:
    """Uniformly random valid action (needs an environment that enumerates actions)."""
    return RandomValidPrior()
