"""A model-free prior: a uniformly random action from the environment's valid actions.

Useful as the cheapest possible black box (smoke tests, environment checks, a floor for
every benchmark) and as a way to run any environment that can enumerate its actions without
an LLM. Registered as prior ``uniform``; it asks the driver for ``valid_actions()`` each step.
"""

from __future__ import annotations

import numpy as np

from amc.registry import PRIORS
from amc.types import INVALID_ACTION, AgentTurn, History, Usage


class UniformPrior:
    """Picks one of ``history.valid_actions`` uniformly at random with the particle's rng."""

    wants_valid_actions = True

    async def propose(self, history: History, rng: np.random.Generator) -> AgentTurn:
        acts = history.valid_actions
        if not acts:  # the environment cannot enumerate: an explicit invalid action
            return AgentTurn(f"Action: {INVALID_ACTION}", INVALID_ACTION, Usage(calls=1))
        a = acts[int(rng.integers(len(acts)))]
        return AgentTurn(f"Thought: random choice.\nAction: {a}", a, Usage(calls=1))

    async def aclose(self) -> None:
        pass


@PRIORS.register("uniform")
def make_uniform_prior(**_: object) -> UniformPrior:
    """Uniformly random valid action (no model)."""
    return UniformPrior()
