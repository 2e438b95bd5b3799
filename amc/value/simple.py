"""The trivial value function f ≡ 0 (plain bootstrap filter on rewards only).

With f ≡ 0 the weight increment is the reward alone, so SMC is still a consistent sampler of
the posterior (the twist only reduces variance); it is the natural "no value model" baseline.
"""

from __future__ import annotations

from collections.abc import Sequence

from amc.registry import VALUES
from amc.types import History


class ZeroValue:
    """f(s) = 0 for every state."""

    constant_by_design = True
    """It ranks nothing, on purpose (SMC with no value): the sampler does not record its
    scores as a value's (``StepInfo.values`` stays null), so no run warns that it scored
    every particle alike (:mod:`amc.smc.value_spread`)."""

    async def score(self, histories: Sequence[History]) -> list[float]:
        return [0.0] * len(histories)

    async def aclose(self) -> None:
        pass


@VALUES.register("none")
def make_zero_value(**_: object) -> ZeroValue:
    """f ≡ 0: weights grow by reward only."""
    return ZeroValue()
