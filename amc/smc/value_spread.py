"""Does a run's value tell particles apart? The share of resampling groups it scores constant.

A *group* is what one weighting step compares: the live particles of one task at one step
where the schedule evaluated the value (:attr:`~amc.smc.records.StepInfo.values`, ``None`` for
particles that were not scored). Resampling only moves mass between members of a group, so a
value that gives every member the same score leaves the weights to the rewards alone --
uniform before any reward: SMC with it is Best-of-N with extra resampling noise. A zero-shot
LLM value that answered the same number for every state of a run did exactly that, unnoticed
(issue 49).

:func:`value_spread` counts the groups and the constant ones (every score equal within a small
tolerance) over a method's results; :func:`constant_value_warning` turns a share of at least
:data:`CONSTANT_SHARE_WARN` into the warning that the run summary, ``amc run``'s table and the
evaluation record carry. Groups with a single live particle compare nothing and are not
counted. A group can be constant for an informative value too (every particle in the same
state), which is why the warning needs most groups, not one.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from amc.smc.records import StepInfo, TaskResult

CONSTANT_SHARE_WARN = 0.9
"""Share of constant groups from which a method's value gets a warning."""
TOLERANCE = 1e-9
"""Scores closer than this (relative to their size, at least 1) count as equal."""


@dataclass(frozen=True)
class ValueSpread:
    """How many value-weighting groups a method had and how many it scored constant."""

    groups: int
    """Groups of two or more live particles whose value was evaluated."""
    constant: int
    """Of those, the groups whose scores were all equal."""

    @property
    def share(self) -> float | None:
        """Share of constant groups; None when the method evaluated no value (Best-of-N)."""
        return self.constant / self.groups if self.groups else None


def scored_groups(steps: Iterable[StepInfo]) -> Iterator[list[float]]:
    """The scores of each group (see the module docstring) among ``steps``."""
    for s in steps:
        scores = [float(v) for v in s.values if v is not None]
        if len(scores) >= 2:
            yield scores


def is_constant(scores: Sequence[float], tol: float = TOLERANCE) -> bool:
    """Whether every score equals the others within ``tol`` (relative, floor 1)."""
    lo, hi = min(scores), max(scores)
    return hi - lo <= tol * max(1.0, abs(lo), abs(hi))


def value_spread(results: Iterable[TaskResult], tol: float = TOLERANCE) -> ValueSpread:
    """Groups and constant groups over all steps of all ``results`` (one method's runs)."""
    groups = constant = 0
    for r in results:
        for scores in scored_groups(r.steps):
            groups += 1
            constant += is_constant(scores, tol)
    return ValueSpread(groups, constant)


def constant_value_warning(method: str, spread: ValueSpread,
                           threshold: float = CONSTANT_SHARE_WARN) -> str | None:
    """The warning for ``method`` when at least ``threshold`` of its groups were constant."""
    share = spread.share
    if share is None or share < threshold or math.isnan(share):
        return None
    return (f"{method}: its value gave every particle of a group the same score in "
            f"{spread.constant} of {spread.groups} groups ({share:.0%}): it does not rank "
            "particles, so resampling there followed the rewards alone (none so far: uniform)")


def spread_fields(method: str, results: Iterable[TaskResult]) -> dict[str, object]:
    """A summary row's fields: ``value_groups``, ``value_constant_share`` (None without a
    value) and ``warnings`` (the constant-value warning, if any)."""
    spread = value_spread(results)
    warning = constant_value_warning(method, spread)
    return {"value_groups": spread.groups, "value_constant_share": spread.share,
            "warnings": [warning] if warning else []}
