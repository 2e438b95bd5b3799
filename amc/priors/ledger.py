"""Cost ledger: tokens and dollars per call, particle, task and run; per-task budgets.

Dollars come from :data:`PRICES`, a versioned table of list prices in USD per million tokens
(``PRICE_TABLE_VERSION``; check the provider's pricing page before trusting it for a bill).
Cached prompt tokens are billed at the cached-input rate; local models cost nothing.
A model name matches its longest table prefix, so ``gpt-4.1-mini-2025-04-14`` is priced as
``gpt-4.1-mini``.

The :class:`Ledger` is shared by every particle and task of a run. A :class:`Budget` caps a
task's tokens or dollars: once spent, the prior stops proposing for that task and answers
``AgentTurn(error="budget exhausted ...")`` (the particle retires; the ledger records the
stop). Calls already in flight when the cap is crossed still finish, so a task may overshoot
by at most one round of concurrent calls.

Example::

    ledger = Ledger(Budget(max_usd=0.50))
    usage = ledger.price("gpt-4.1-mini", prompt=1200, completion=80, cached=1024)
    ledger.record("task-7", usage, particle=3)
    ledger.task("task-7").cost_usd, ledger.run.calls
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass, field

from amc.config import Frozen
from amc.types import Usage

BUDGET_STOP = "budget exhausted"
"""How a budget stop's reason begins (the runner tells it apart from a failure)."""

PRICE_TABLE_VERSION = "2025-11"
"""When the list prices below were copied from the provider's pricing page."""


class Price(Frozen):
    """USD per million tokens."""

    input: float
    """Uncached prompt tokens."""
    cached_input: float
    """Prompt tokens served from the provider's prompt cache."""
    output: float
    """Completion tokens (reasoning tokens included)."""


PRICES: dict[str, Price] = {
    "gpt-4.1-mini": Price(input=0.40, cached_input=0.10, output=1.60),
    "gpt-4.1-nano": Price(input=0.10, cached_input=0.025, output=0.40),
    "gpt-4.1": Price(input=2.00, cached_input=0.50, output=8.00),
    "gpt-4o-mini": Price(input=0.15, cached_input=0.075, output=0.60),
    "gpt-5.1": Price(input=1.25, cached_input=0.125, output=10.00),
    "gpt-5-mini": Price(input=0.25, cached_input=0.025, output=2.00),
    "gpt-5-nano": Price(input=0.05, cached_input=0.005, output=0.40),
    "gpt-5": Price(input=1.25, cached_input=0.125, output=10.00),
    "local": Price(input=0.0, cached_input=0.0, output=0.0),
}
"""Model -> price (version :data:`PRICE_TABLE_VERSION`); ``local`` is any self-hosted model."""


def lookup_price(model: str) -> Price | None:
    """The price of ``model`` by longest matching prefix, or ``None`` if unknown."""
    best = max((k for k in PRICES if model.lower().startswith(k)), key=len, default=None)
    return PRICES[best] if best else None


def cost_usd(price: Price, prompt: int, completion: int, cached: int = 0) -> float:
    """Dollars for one call; ``cached`` is the part of ``prompt`` read from the cache."""
    cached = min(cached, prompt)
    return (
        (prompt - cached) * price.input + cached * price.cached_input + completion * price.output
    ) / 1e6


class Budget(Frozen):
    """Per-task spending cap; ``None`` fields are unlimited."""

    max_tokens: int | None = None
    """Prompt + completion tokens per task."""
    max_usd: float | None = None
    """Dollars per task."""


particle_var: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "amc_particle", default=None
)
"""The particle index a driver may set around ``propose`` so calls are attributed to it."""


@dataclass
class Ledger:
    """Running totals of :class:`~amc.types.Usage` per task, per (task, particle) and per run."""

    budget: Budget = field(default_factory=Budget)
    run: Usage = field(default_factory=Usage)
    tasks: dict[str, Usage] = field(default_factory=dict)
    particles: dict[tuple[str, int], Usage] = field(default_factory=dict)
    budget_stops: dict[str, str] = field(default_factory=dict)
    """Task id -> the reason proposing stopped."""
    cache_hits: int = 0
    failures: dict[str, int] = field(default_factory=dict)
    """Failure reason (first words) -> count."""

    @staticmethod
    def price(model: str, prompt: int, completion: int, cached: int = 0,
              price: Price | None = None, retries: int = 0) -> Usage:
        """One call's usage with its dollar cost (0 for an unknown model)."""
        p = price or lookup_price(model) or PRICES["local"]
        return Usage(
            prompt_tokens=prompt, completion_tokens=completion, cached_tokens=cached, calls=1,
            retries=retries, cost_usd=cost_usd(p, prompt, completion, cached),
        )

    def record(self, task_id: str, usage: Usage, particle: int | None = None) -> None:
        """Add one call's usage to the task, particle and run totals."""
        particle = particle_var.get() if particle is None else particle
        self.run = self.run + usage
        self.tasks[task_id] = self.tasks.get(task_id, Usage()) + usage
        if particle is not None:
            key = (task_id, particle)
            self.particles[key] = self.particles.get(key, Usage()) + usage

    def record_failure(self, reason: str) -> None:
        key = " ".join(reason.split()[:3])
        self.failures[key] = self.failures.get(key, 0) + 1

    def task(self, task_id: str) -> Usage:
        return self.tasks.get(task_id, Usage())

    def exhausted(self, task_id: str) -> str | None:
        """Why ``task_id`` may not spend more, or ``None``; records the first stop."""
        if task_id in self.budget_stops:
            return self.budget_stops[task_id]
        u, b = self.task(task_id), self.budget
        reason = None
        if b.max_tokens is not None and u.total_tokens >= b.max_tokens:
            reason = (
                f"{BUDGET_STOP}: {u.total_tokens} of {b.max_tokens} tokens for task {task_id}"
            )
        elif b.max_usd is not None and u.cost_usd >= b.max_usd:
            reason = f"{BUDGET_STOP}: ${u.cost_usd:.4f} of ${b.max_usd:.4f} for task {task_id}"
        if reason:
            self.budget_stops[task_id] = reason
        return reason

    def summary(self) -> dict[str, object]:
        """Run totals for logs and result files (no secrets, JSON-serialisable)."""
        return {
            "run": self.run.to_dict(),
            "tasks": {k: v.to_dict() for k, v in self.tasks.items()},
            "budget_stops": dict(self.budget_stops),
            "cache_hits": self.cache_hits,
            "failures": dict(self.failures),
            "price_table": PRICE_TABLE_VERSION,
        }
