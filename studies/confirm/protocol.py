"""A confirmatory protocol: one benchmark's chosen regime, declared before its one run.

The file (``studies/confirm/<benchmark>.json``, committed before any of its rows exist: git
log shows the order) fixes everything the result depends on:

- ``regime``: the planner-mix skill q, particles N, beta, resampling schedule, step budget
  (and TextCraft's slack / menu form), with ``how_chosen`` in words;
- ``value``: the learned value's content hash (:func:`amc.value.digest.model_hash`) and where
  its kept copy is; the run refuses a model of another hash;
- ``tasks``: the rule that draws them (a recorded seed, the pool, the earlier cells' tasks it
  leaves out, the size; WebShop's also the seed of the generated catalog its goals come
  from) -- the drawn list is written beside the results when the run starts;
- ``seeds``; ``arms`` (Best-of-N ``bon``, AMC with the learned value ``amc``, AMC with no
  value ``amc_none``, the rollout ceiling ``ceiling``), all on the same (task, seed) pairs;
- ``primary``: the comparisons (arm minus arm) the result is, on ``metric``;
- ``analysis``: paired by task, seeds averaged within a task, 95% t interval over tasks,
  exact sign-flip p, Holm over the study's test cells (:mod:`studies.confirm.analysis`);
- ``status``: ``declared`` (runnable here), or ``blocked`` with ``blocked_by``: what this
  machine lacks; a blocked protocol refuses to run until a later commit lifts it
  (``unblocked_by`` then starts with that commit's time).

When it was declared is git's to say, never typed: :attr:`Protocol.declared_utc` is the time
of the commit that added the file (:func:`declared_at`). A file may carry it as
``declared_utc`` for readers without git history; :func:`load` refuses one that differs.

The protocol's hash is the sha256 of the file's bytes; a run records it and refuses to resume
under another (:mod:`studies.confirm.once`).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
BENCHMARKS = ("sciworld", "webshop", "textcraft")
ARMS = ("bon", "amc", "amc_none", "ceiling")


@dataclass(frozen=True)
class Protocol:
    """One declared confirmatory run (the parsed file and its content hash)."""

    id: str
    benchmark: str
    status: str
    regime: dict[str, Any]
    value: dict[str, Any]
    tasks: dict[str, Any]
    seeds: tuple[int, ...]
    arms: tuple[str, ...]
    primary: tuple[tuple[str, str], ...]
    metric: str
    blocked_by: str
    raw: dict[str, Any]
    sha256: str
    declared_utc: str | None = None
    """When the file was committed (:func:`declared_at`; None before its commit)."""

    @property
    def runnable(self) -> bool:
        return self.status == "declared"


def git_times(path: str | Path, *log_args: str) -> list[str]:
    """Commit times (UTC, ``...Z``, newest first) of the commits ``git log <log_args>`` lists
    for ``path``; [] outside a git work tree, in a shallow clone (whose first commit would
    seem to add every file) or before the file is committed."""
    path = Path(path).resolve()
    try:
        git = ["git", "-C", str(path.parent)]
        shallow = subprocess.run([*git, "rev-parse", "--is-shallow-repository"], check=True,
                                 capture_output=True, text=True).stdout.strip()
        if shallow != "false":
            return []
        out = subprocess.run([*git, "log", "--format=%ct", *log_args, "--", path.name],
                             check=True, capture_output=True, text=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        return []
    return [time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(t))) for t in out]


def declared_at(path: str | Path) -> str | None:
    """When git committed the file at ``path`` (the commit that added it), or None."""
    times = git_times(path, "--diff-filter=A")
    return times[-1] if times else None


def load(path: str | Path) -> Protocol:
    """Parse and check a protocol file (ValueError on a malformed one, or on a
    ``declared_utc`` that is not the time git committed the file)."""
    data = Path(path).read_bytes()
    raw = json.loads(data)
    declared = declared_at(path)
    if declared and raw.get("declared_utc", declared) != declared:
        raise ValueError(f"{path}: declared_utc {raw['declared_utc']} is not when git "
                         f"committed the file ({declared}): the time comes from git")
    unblocked = git_times(path, "-S", '"unblocked_by"')  # the commit that wrote the key
    if unblocked and "unblocked_by" in raw \
            and not str(raw["unblocked_by"]).startswith(f"{unblocked[-1]}: "):
        raise ValueError(f"{path}: unblocked_by starts with when git committed it "
                         f"({unblocked[-1]}: ...), not a typed time")
    bench = raw.get("benchmark")
    if bench not in BENCHMARKS:
        raise ValueError(f"{path}: benchmark {bench!r} is not one of {BENCHMARKS}")
    arms = tuple(raw["arms"])
    if not set(arms) <= set(ARMS) or "bon" not in arms:
        raise ValueError(f"{path}: arms {arms} must include bon and lie in {ARMS}")
    primary = tuple((str(a), str(b)) for a, b in raw["primary"])
    if not primary or any(a not in arms or b not in arms for a, b in primary):
        raise ValueError(f"{path}: every primary comparison names two declared arms")
    if raw["status"] not in ("declared", "blocked"):
        raise ValueError(f"{path}: status is declared or blocked, not {raw['status']!r}")
    if raw["status"] == "blocked" and not raw.get("blocked_by"):
        raise ValueError(f"{path}: a blocked protocol says what blocks it (blocked_by)")
    return Protocol(id=str(raw["id"]), benchmark=bench, status=raw["status"],
                    regime=dict(raw["regime"]), value=dict(raw.get("value") or {}),
                    tasks=dict(raw["tasks"]), seeds=tuple(int(s) for s in raw["seeds"]),
                    arms=arms, primary=primary, metric=str(raw["metric"]),
                    blocked_by=str(raw.get("blocked_by") or ""), raw=raw,
                    sha256=hashlib.sha256(data).hexdigest(),
                    declared_utc=declared or raw.get("declared_utc"))


def used_tasks(files: list[str | Path], root: Path) -> set[str]:
    """Task ids earlier cells used: every id under the ``train``/``test`` keys of the task
    files (SciWorld's ``sweeps/sciworld_tasks.json``: its test cells, validation cells and the
    value's training games)."""
    out: set[str] = set()
    for f in files:
        data = json.loads((root / f).read_text())
        for k in ("train", "test"):
            out |= {str(i) for i in data.get(k, [])}
    return out


def draw_order(pool: list[str], seed: int) -> list[str]:
    """The pool in the declared seed's random order (numpy's PCG64 permutation)."""
    import numpy as np

    return [pool[i] for i in np.random.default_rng(seed).permutation(len(pool))]


def sciworld_tasks(proto: Protocol, suite: Any, root: Path) -> list[dict[str, Any]]:
    """SciWorld's fresh games: the games of the declared task types, in the seed's random
    order, without every game an earlier cell used, kept while the gold path has at most
    ``max_gold`` actions, until ``n`` are kept. Returns [{task_id, gold_len}] in draw order."""
    t = proto.tasks
    used = used_tasks(t["exclude_files"], root)
    pool = [str(g.index) for g in suite.games() if g.task_name in set(t["task_types"])
            and str(g.index) not in used]
    kept: list[dict[str, Any]] = []
    for tid in draw_order(sorted(pool, key=int), int(t["seed"])):
        gold = len(suite.gold_actions(tid))
        if gold <= int(t["max_gold"]):
            kept.append({"task_id": tid, "gold_len": gold})
        if len(kept) == int(t["n"]):
            return kept
    raise ValueError(f"{proto.id}: only {len(kept)} fresh games fit (declared {t['n']})")


def webshop_tasks(proto: Protocol, suite: Any, used_goals: set[str]) -> list[dict[str, Any]]:
    """WebShop's fresh goals: the goals of the declared source catalog (``suite``: the
    generated fixture catalog at ``tasks.fixture_seed``) whose instruction text is none of
    ``used_goals`` (every goal of the catalogs earlier cells and the value used), in the
    seed's random order, the first ``n``. Returns [{task_id, goal}] in draw order."""
    t = proto.tasks
    goals = suite.catalog.goals
    pool = [str(i) for i, g in enumerate(goals) if g["instruction_text"] not in used_goals]
    drawn = draw_order(pool, int(t["seed"]))[: int(t["n"])]
    if len(drawn) < int(t["n"]):
        raise ValueError(f"{proto.id}: only {len(drawn)} fresh goals (declared {t['n']})")
    return [{"task_id": tid, "goal": goals[int(tid)]["instruction_text"]} for tid in drawn]


def textcraft_tasks(proto: Protocol, suite: Any) -> list[dict[str, Any]]:
    """TextCraft: the declared split's tasks of the declared depth (fresh seeds, not tasks)."""
    return [{"task_id": tid} for tid in suite.task_ids(proto.tasks["split"])]
