"""The declared protocol of a value-methods study: validation size, candidates, choice rule.

A protocol file (``sweeps/protocol-issue30.yaml``) is committed before any test cell of its
study runs. It fixes the validation split (a seeded random sample of train tasks, its size set
so that the paired interval of AMC - Best-of-N is within +-``half_width``), the candidate list
(value variants x sweep settings) and the rule that picks one candidate from its validation
cells; each candidate's test cells then run once and are reported whatever they show.

Validation size. With d_ts the difference of task t, seed s, and m_t its mean over S seeds, the
interval's half-width over n tasks is t_{0.975, n-1} sqrt(var(m_t) / n) with
var(m_t) = sigma_b^2 + sigma_w^2 / S (between-task variance plus within-task variance over the
seeds). Both components are estimated from committed cells (the basis: the largest var(m_t)
among them, conservative) and n is the smallest size whose half-width is within bound.
Pure, apart from :func:`load_protocol` and :func:`main`, which prints the DVC commands that
queue the candidates' validation cells (``python -m studies.sweeps.protocol FILE validation``) or
the chosen candidate's test cells and their ceiling twins (``... FILE test --chosen NAME``).
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field
from scipy import stats

from amc.config import Frozen, load_yaml
from studies.sweeps.select import MAIN, compare


class Variance(Frozen):
    """Variance components of a cell's per-(task, seed) differences."""

    between: float
    """sigma_b^2: variance of the task means minus the within part's share."""
    within: float
    """sigma_w^2: mean over tasks of the variance over seeds."""
    seeds: int
    """S, seeds per task in the basis cell."""


class Candidate(Frozen):
    """One candidate: a value variant (value-stage params) at one sweep setting (cell params)."""

    name: str
    """Unique label (used in the choice's report)."""
    value: dict[str, Any] = Field(default_factory=dict)
    """Overrides of ``value.*`` (the variant); {} = the base value stage."""
    cell: dict[str, Any] = Field(default_factory=dict)
    """Overrides of ``cell.*`` (the sweep setting) of its validation and test cells."""


class Validation(Frozen):
    """The declared validation split and the calculation of its size."""

    half_width: float = Field(0.05, gt=0)
    """Bound on the 95% paired interval's half-width of AMC - Best-of-N."""
    tasks: int = Field(ge=2)
    """n, validation tasks (a seeded random sample of the train split)."""
    seeds: int = Field(ge=1)
    """S, seeds per validation task."""
    sample_seed: int = 0
    """``cell.val_seed`` of the sample."""
    basis: str
    """The committed cell whose variance sets n (the largest var(m_t) of the basis set)."""
    variance: Variance
    """Its variance components (checked against the committed evidence by a test)."""


class Choice(Frozen):
    """The rule that picks one candidate from its validation cells."""

    metric: str = MAIN
    """Task metric of the paired difference AMC - Best-of-N."""
    tie: float = Field(0.0, ge=0)
    """Candidates within ``tie`` of the best mean count as tied; the earliest listed wins."""


class Protocol(Frozen):
    """A whole protocol file."""

    issue: int
    """The issue the study belongs to."""
    label: str | None = None
    """The file's stem where an issue has several protocols (None: ``protocol-issue<N>``)."""
    validation: Validation
    """The validation split."""
    candidates: tuple[Candidate, ...]
    """In order of preference (a tie goes to the earlier)."""
    value_base: dict[str, Any] = Field(default_factory=dict)
    """Value keys every candidate's cells ran with that no candidate overrides (the params
    file's values then), so a cell that differs in them -- another study's -- is not taken
    for a candidate's; a candidate's own ``value`` wins over it."""
    choice: Choice = Choice()
    """The choice rule."""
    test: tuple[dict[str, Any], ...] = ()
    """Cell overrides of the test cells the chosen candidate runs (once each)."""


def stem(protocol: Protocol) -> str:
    """The protocol file's stem (``protocol-issue30``, ``protocol-issue30-render``)."""
    return protocol.label or f"protocol-issue{protocol.issue}"


def load_protocol(path: str | Path) -> Protocol:
    """The validated protocol file."""
    return Protocol.model_validate(load_yaml(Path(path)) or {})


def variance_components(rec: dict[str, Any], metric: str = MAIN) -> Variance:
    """(sigma_b^2, sigma_w^2, S) of a cell record's per-(task, seed) differences."""
    by_task: dict[str, list[float]] = defaultdict(list)
    for r in rec["rows"]:
        by_task[r["task_id"]].append(r["amc"]["metrics"][metric] - r["bon"]["metrics"][metric])
    seeds = {len(v) for v in by_task.values()}
    if len(seeds) != 1 or seeds == {1} or len(by_task) < 2:
        raise ValueError(f"{rec['name']}: needs >= 2 tasks with the same >= 2 seeds each")
    m = np.array(list(by_task.values()), float)
    s = m.shape[1]
    within = float(m.var(axis=1, ddof=1).mean())
    between = max(float(m.mean(axis=1).var(ddof=1)) - within / s, 0.0)
    return Variance(between=between, within=within, seeds=s)


def half_width(v: Variance, tasks: int, seeds: int) -> float:
    """95% Student-t half-width of the paired mean over ``tasks`` tasks x ``seeds`` seeds."""
    return float(stats.t.ppf(0.975, tasks - 1) * np.sqrt((v.between + v.within / seeds) / tasks))


def needed_tasks(v: Variance, seeds: int, bound: float, most: int = 100_000) -> int:
    """The smallest number of tasks whose half-width is within ``bound``."""
    for n in range(2, most + 1):
        if half_width(v, n, seeds) <= bound:
            return n
    raise ValueError(f"no task count up to {most} reaches +-{bound}")


def basis(records: Sequence[dict[str, Any]]) -> tuple[dict[str, Any], Variance]:
    """The record of largest task-mean variance at its own seed count (and its components)."""
    scored = [(variance_components(r), r) for r in records]
    v, rec = max(scored, key=lambda x: (x[0].between + x[0].within / x[0].seeds, x[1]["name"]))
    return rec, v


def choose(protocol: Protocol, validation: dict[str, dict[str, Any]]) -> Candidate:
    """The candidate the rule picks, from each candidate's validation cell record (by name).

    Highest mean paired difference; candidates within ``tie`` of it are tied and the earliest
    listed wins. Every candidate must have its cell (no choice on a partial list)."""
    missing = [c.name for c in protocol.candidates if c.name not in validation]
    if missing:
        raise ValueError(f"validation cells missing for: {', '.join(missing)}")
    means = []
    for c in protocol.candidates:
        p = compare(validation[c.name], protocol.choice.metric)
        if p is None:
            raise ValueError(f"{c.name}: no {protocol.choice.metric} in its validation cell")
        means.append(p.d.mean)
    best = max(means)
    return next(c for c, m in zip(protocol.candidates, means, strict=True)
                if m >= best - protocol.choice.tie)


def _flags(prefix: str, overrides: dict[str, Any]) -> list[str]:
    def text(v: Any) -> str:
        if isinstance(v, bool):
            return str(v).lower()
        return f"[{','.join(map(str, v))}]" if isinstance(v, list | tuple) else str(v)

    return [f"-S '{prefix}.{k}={text(v)}'" for k, v in sorted(overrides.items())]


def value_overrides(protocol: Protocol, cand: Candidate) -> dict[str, Any]:
    """Every value key some candidate overrides, at ``cand``'s value or else the code default
    (:class:`~studies.sweeps.config.ValueParams`): a candidate is defined against the code's
    defaults, so its commands do not change when ``sweeps/params.yaml`` takes the winner."""
    from studies.sweeps.config import ValueParams

    base = {**ValueParams().model_dump(mode="json"), **protocol.value_base}
    keys = sorted({k for c in protocol.candidates for k in c.value} | set(protocol.value_base))
    return {k: cand.value.get(k, base[k]) for k in keys}


def commands(protocol: Protocol, stage: str, chosen: str | None = None) -> list[str]:
    """``dvc exp run --queue`` lines (run in ``sweeps/``): every candidate's validation cell,
    or the chosen candidate's test cells with the rollout ceiling at the same settings. Each
    names its stages (``value cell``; ``cell`` for a ceiling): without targets an experiment
    also reproduces the other benchmarks' value stages where their outputs are not cached
    (a fresh clone), which changes nothing in the cell and costs their whole runs."""
    q = "dvc exp run --queue"
    if stage == "validation":
        return [" ".join([q, "value cell", *_flags("value", value_overrides(protocol, c)), *_flags(
            "cell", {**c.cell, "value": "learned", "split": "validation"})])
            for c in protocol.candidates]
    pick = next((c for c in protocol.candidates if c.name == chosen), None)
    if pick is None:
        raise ValueError(f"--chosen must name a candidate, got {chosen!r}")
    out = []
    for t in protocol.test:
        cell = {**pick.cell, **t, "split": "test"}
        out.append(" ".join([q, "value cell", *_flags("value", value_overrides(protocol, pick)),
                             *_flags("cell", {**cell, "value": "learned"})]))
        ceiling = {k: v for k, v in cell.items() if k != "sharpen"}
        out.append(" ".join([q, "cell", *_flags("cell", {**ceiling, "value": "rollout"})]))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="print the DVC commands of a declared protocol")
    ap.add_argument("file", type=Path)
    ap.add_argument("stage", choices=("validation", "test"))
    ap.add_argument("--chosen", help="the candidate the choice rule picked (test stage)")
    args = ap.parse_args(argv)
    try:
        lines = commands(load_protocol(args.file), args.stage, args.chosen)
    except (OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
