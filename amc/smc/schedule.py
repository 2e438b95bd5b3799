"""When to evaluate the value model and when to resample.

Three schedules (``SMCConfig.resample``):

- ``never``: importance sampling only (Best-of-N, ReAct). No value calls at all.
- ``fixed``: resample after the steps listed in ``resample_steps`` (the paper's choice, e.g.
  [4] on TextCraft). Between two such steps the weight increments telescope
  (log w_t - log w_t0 = (f(s_t) - f(s_t0) + sum of rewards) / beta), so the value model is
  evaluated only at resampling steps -- exact, not an approximation.
- ``ess``: evaluate the value every step, accumulate weights, and resample when
  ESS < rho * N.

No schedule resamples after the last step: the final population is the output.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ScheduleKind = Literal["never", "fixed", "ess"]


@dataclass(frozen=True)
class Schedule:
    """A resampling schedule; pure decisions from (t, ESS)."""

    kind: ScheduleKind
    steps: frozenset[int] = frozenset()
    rho: float = 0.5
    max_steps: int = 20

    def __post_init__(self) -> None:
        if self.kind not in ("never", "fixed", "ess"):
            raise ValueError(f"unknown resampling schedule {self.kind!r}: never | fixed | ess")
        if not 0.0 < self.rho <= 1.0:
            raise ValueError(f"ESS threshold rho must be in (0, 1], got {self.rho}")
        bad = sorted(s for s in self.steps if s < 1)
        if bad:
            raise ValueError(f"resample steps must be >= 1, got {bad}")
        late = sorted(s for s in self.steps if s >= self.max_steps)
        if self.kind == "fixed" and late:
            raise ValueError(f"resample steps {late} are not before the last step "
                             f"{self.max_steps}: they would never resample")

    def evaluates_value(self, t: int) -> bool:
        """Whether the value model is needed after step ``t`` (1-based)."""
        if t >= self.max_steps or self.kind == "never":
            return False
        return self.kind == "ess" or t in self.steps

    def resamples(self, t: int, ess: float, n: int) -> bool:
        """Whether to resample after step ``t`` given the current ESS of n particles."""
        if not self.evaluates_value(t):
            return False
        return self.kind == "fixed" or ess < self.rho * n
