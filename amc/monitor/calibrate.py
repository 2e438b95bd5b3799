"""Calibration: is a task mix saturated for a prior? Best-of-k from G independent rollouts.

AMC can only beat Best-of-N where more samples would still find new successes: if Best-of-4
already solves every task that Best-of-15 solves, the tasks are all-or-nothing for the prior
and resampling has nothing to add (docs/results.md measured exactly that at 12 steps). So the
evaluation's task mix is chosen by a calibration run on *train* tasks: G prior rollouts per task
(the ``collect`` stage's ``bon@G`` files), from which the probability that Best-of-k finds a
success is estimated without bias for every k <= G (Chen et al., 2021, "pass@k"):

    pass@k = 1 - C(G - c, k) / C(G, k)        (c successes among the task's G rollouts)

-- the chance that k rollouts drawn without replacement from the G contain a success. The mix
is *unsaturated* when the mean over tasks of pass@k_hi - pass@k_lo reaches ``margin`` (the issue
asks for >= 0.1 between k = 4 and k = 15). A task's rollouts over several seeds are pooled (they
are independent draws of the same prior); a trajectory whose agent failed (endpoint error) is not
a draw of the prior and is left out.

``budget`` calibrates a shorter step budget from the same rollouts: a success counts only when the
reward reaches the threshold within the first ``budget`` steps. That is exact when the prior's
proposals do not depend on the budget (the embedded prompts do not show it) and its random
numbers are drawn per (task, step, slot), as the runner's are: a b-step run is then the first b
steps of a longer one. So one collection calibrates every budget up to its own.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from amc.results import read_task_records
from amc.stats import PairedDifference, paired_difference, task_mean_se


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased P(Best-of-k finds a success) from c successes among n rollouts (k <= n)."""
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= successes <= rollouts, got c={c}, n={n}")
    if not 1 <= k <= n:
        raise ValueError(f"pass@{k} needs 1 <= k <= rollouts ({n})")
    if n - c < k:
        return 1.0  # every k-subset holds a success
    # C(n-c, k) / C(n, k) as a product: no huge integers, no overflow
    return 1.0 - math.prod((n - c - i) / (n - i) for i in range(k))


@dataclass(frozen=True)
class TaskCalibration:
    """One task's rollouts: how many, how many succeeded, and Best-of-k at the two k."""

    task_id: str
    rollouts: int
    successes: int
    pass_lo: float
    pass_hi: float


@dataclass(frozen=True)
class Calibration:
    """The verdict on a task mix: Best-of-k_lo vs Best-of-k_hi over its tasks."""

    k_lo: int
    k_hi: int
    margin: float
    threshold: float
    budget: int | None
    """Step budget the successes were counted within (None: the rollouts' own)."""
    tasks: tuple[TaskCalibration, ...]
    pass_1: tuple[float, float]
    """Mean and s.e. over tasks of the single-rollout success rate (ReAct's expectation)."""
    pass_lo: tuple[float, float]
    pass_hi: tuple[float, float]
    gap: PairedDifference
    """pass@k_hi - pass@k_lo over tasks (95% t interval)."""

    @property
    def rollouts(self) -> int:
        return sum(t.rollouts for t in self.tasks)

    @property
    def unsaturated(self) -> bool:
        """Whether more samples still find new successes by at least ``margin`` on average."""
        return bool(self.gap.mean >= self.margin)

    def to_dict(self) -> dict[str, Any]:
        return {"k_lo": self.k_lo, "k_hi": self.k_hi, "margin": self.margin,
                "threshold": self.threshold, "budget": self.budget, "rollouts": self.rollouts,
                "n_tasks": len(self.tasks), "pass_1": list(self.pass_1),
                "pass_lo": list(self.pass_lo), "pass_hi": list(self.pass_hi),
                "gap": self.gap.to_dict(), "unsaturated": self.unsaturated,
                "tasks": [asdict(t) for t in self.tasks]}


def succeeded(traj: Mapping[str, Any], threshold: float, budget: int | None) -> bool:
    """Whether a trajectory's reward reached ``threshold`` (within its first ``budget`` steps)."""
    if budget is None:
        return float(traj["total_reward"]) >= threshold
    return sum(float(s["reward"]) for s in traj["steps"][:budget]) >= threshold


def outcomes(records: Iterable[Mapping[str, Any]], threshold: float,
             budget: int | None = None) -> dict[str, list[bool]]:
    """Success of every non-failed trajectory, pooled by task."""
    out: dict[str, list[bool]] = defaultdict(list)
    for rec in records:
        if budget is not None and rec.get("budget") is not None and budget > rec["budget"]:
            raise ValueError(f"--budget: {budget} > the {rec['budget']} steps the rollouts ran "
                             "under: a longer budget cannot be calibrated from them")
        for traj in rec["trajectories"]:
            if traj.get("failure") is None:
                out[str(rec["task_id"])].append(succeeded(traj, threshold, budget))
    return dict(out)


def calibrate(records: Iterable[Mapping[str, Any]], *, k_lo: int = 4, k_hi: int = 15,
              threshold: float = 1.0, margin: float = 0.1,
              budget: int | None = None) -> Calibration:
    """Best-of-k_lo vs Best-of-k_hi of the prior over the tasks of ``records``.

    Raises ``ValueError`` when k_lo >= k_hi, when there are no rollouts, or when a task has fewer
    than k_hi rollouts (its pass@k_hi cannot be estimated); the message starts with the flag of
    ``amc calibrate`` to change.
    """
    if not 1 <= k_lo < k_hi:
        raise ValueError(f"--k-lo, --k-hi: need 1 <= k_lo < k_hi, got {k_lo}, {k_hi}")
    if budget is not None and budget < 1:
        raise ValueError(f"--budget: must be >= 1 step, got {budget}")
    by_task = outcomes(records, threshold, budget)
    if not by_task:
        raise ValueError("no rollouts to calibrate on")
    short = sorted(t for t, xs in by_task.items() if len(xs) < k_hi)
    if short:
        raise ValueError(f"--k-hi: {len(short)} task(s) have fewer than {k_hi} rollouts "
                         f"(e.g. {short[0]!r}: {len(by_task[short[0]])}); collect with "
                         f"rollouts >= {k_hi}")
    rows = tuple(
        TaskCalibration(t, len(xs), sum(xs), pass_at_k(len(xs), sum(xs), k_lo),
                        pass_at_k(len(xs), sum(xs), k_hi))
        for t, xs in sorted(by_task.items()))
    hi = {(r.task_id, 0): r.pass_hi for r in rows}
    lo = {(r.task_id, 0): r.pass_lo for r in rows}
    return Calibration(
        k_lo, k_hi, margin, threshold, budget, rows,
        pass_1=task_mean_se((r.task_id, r.successes / r.rollouts) for r in rows),
        pass_lo=task_mean_se((r.task_id, r.pass_lo) for r in rows),
        pass_hi=task_mean_se((r.task_id, r.pass_hi) for r in rows),
        gap=paired_difference(hi, lo))


def read_results(results_dir: Path) -> list[dict[str, Any]]:
    """Every task record of the ``*.jsonl`` results files in a folder (failures files skipped).

    Each (task, seed) must come from one record: a task recorded twice in a file is refused
    (file:line), and so is a (task, seed) in two files -- two methods' files of one seed (a
    ``bon@4`` file left beside ``bon@8`` after ``collect.rollouts`` changed) share their first
    rollouts (the same seed draws the same ones), which would count twice."""
    files = sorted(p for p in Path(results_dir).glob("*.jsonl")
                   if not p.name.endswith(".failures.jsonl"))
    if not files:
        raise FileNotFoundError(f"no results files (*.jsonl) in {results_dir}")
    out: list[dict[str, Any]] = []
    where: dict[tuple[str, Any], Path] = {}
    for f in files:
        for rec in read_task_records(f):
            key = (str(rec.get("task_id")), rec.get("seed"))
            if key in where:
                raise ValueError(f"{f}: task {key[0]!r} of seed {key[1]} is in {where[key].name}"
                                 " too: one seed's rollouts would count twice; calibrate one "
                                 "method's files (move the others away)")
            where[key] = f
            out.append(rec)
    return out


def format_calibration(c: Calibration) -> str:
    """A short human summary (markdown)."""
    def ms(x: tuple[float, float]) -> str:
        return f"{x[0]:.3f} ± {x[1]:.3f}"
    g = c.gap
    verdict = "unsaturated" if c.unsaturated else "saturated"
    budget = "the rollouts' own" if c.budget is None else str(c.budget)
    return "\n".join([
        f"Budget: {budget} steps.",
        "",
        f"| tasks | rollouts | success per rollout | Best-of-{c.k_lo} | Best-of-{c.k_hi} "
        f"| Best-of-{c.k_hi} − Best-of-{c.k_lo} [95%] |",
        "|---|---|---|---|---|---|",
        f"| {len(c.tasks)} | {c.rollouts} | {ms(c.pass_1)} | {ms(c.pass_lo)} | {ms(c.pass_hi)} "
        f"| {g.mean:+.3f} [{g.lo:+.3f}, {g.hi:+.3f}] |",
        "",
        f"Verdict: **{verdict}** (gap {g.mean:+.3f} vs the margin {c.margin:.2f}).",
    ])
