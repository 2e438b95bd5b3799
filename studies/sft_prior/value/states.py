"""The states a value of the chosen regime is trained and scored on, from kept rollouts.

A rollout of the fine-tuned prior is cut at the regime's horizon H (an H-step rollout is the
first H steps of a longer one: the prompt does not show the budget, the regime search's rule);
its outcome is success within H. A *state* is a prefix after k actions, with

- ``group`` = (task, k): the siblings a resampling step compares, pooled over seeds (the
  value-options studies' groups: within-(task, step) AUC is computed over them);
- ``run`` = (task, seed, i // N, k): the N particles of one run that one resampling step
  actually weighs together (the within-run spread);
- ``success``: the rollout reached reward 1 within H steps; ``target``: reward still to come
  within H; ``reward_so_far``.

Which prefixes: **training** tables hold every prefix k = 0 .. min(T, H) (the last, terminal
or at the horizon, flagged ``last``: the pipeline's dataset rows, which the MiniLM options
train on; the LLM head trains on the rest). **Scoring** tables hold the prefixes at the
resampling steps k in range(t, H, t) of rollouts that had not ended by step k -- the states
the value weighs in a run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from amc.types import History
from amc.value.room import success_step

Rollouts = dict[str, list[tuple[int, int, History]]]
"""task -> (seed, index within the (task, seed) record, history) of every rollout."""


def load(folder: Path) -> Rollouts:
    """Every kept rollout of a folder of ``bon@*__seed*.jsonl(.gz)`` records, by task."""
    from studies.llm_regime.regime_search.analyse import read_records, task_histories

    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: no kept rollouts")
    return task_histories(read_records(folder))


def cut(h: History, horizon: int) -> History:
    """The rollout's first ``horizon`` steps, with that budget."""
    return History(h.task_id, h.observation0, h.steps[:horizon], budget=horizon)


@dataclass
class Table:
    """States, one entry per state in every field."""

    histories: list[History]
    groups: list[tuple[str, int]]
    runs: list[tuple[str, int, int, int]]
    success: np.ndarray
    target: np.ndarray
    reward_so_far: np.ndarray
    last: np.ndarray
    """The rollout's last prefix (terminal, or at the horizon): no value scores it in a run."""

    def __len__(self) -> int:
        return len(self.histories)

    @property
    def tasks(self) -> list[str]:
        return sorted({g[0] for g in self.groups}, key=_task_key)

    def select(self, idx: Any) -> Table:
        """The states at ``idx`` (indices or a boolean mask), in that order."""
        ix = np.flatnonzero(idx) if np.asarray(idx).dtype == bool else np.asarray(idx, int)
        return Table([self.histories[i] for i in ix], [self.groups[i] for i in ix],
                     [self.runs[i] for i in ix], self.success[ix], self.target[ix],
                     self.reward_so_far[ix], self.last[ix])

    def of_tasks(self, tasks: set[str]) -> Table:
        return self.select(np.array([g[0] in tasks for g in self.groups], bool))

    def at_steps(self, steps: tuple[int, ...]) -> Table:
        return self.select(np.array([g[1] in steps for g in self.groups], bool))

    def to_split(self, render: Any) -> Any:
        """The :class:`studies.value_options.states.Split` of these states (MiniLM options)."""
        from studies.value_options.states import Split

        return Split([render(h) for h in self.histories], self.target, self.reward_so_far,
                     self.success, list(self.groups),
                     [(t, s, k) for t, s, _, k in self.runs])


def _task_key(t: str) -> tuple[int, str]:
    return (int(t), t) if t.isdigit() else (1 << 30, t)


def table(rollouts: Rollouts, horizon: int, n: int, steps: tuple[int, ...] | None) -> Table:
    """States of ``rollouts`` cut at ``horizon``: at the resampling ``steps`` (rollouts not
    ended by then), or every prefix k = 0 .. min(T, H) when ``steps`` is None."""
    hs, groups, runs, won, tgt, so_far, last = [], [], [], [], [], [], []
    for task in sorted(rollouts, key=_task_key):
        for seed, i, full in sorted(rollouts[task], key=lambda x: (x[0], x[1])):
            h = cut(full, horizon)
            at = success_step(h, 1.0)
            rewards = [float(s.reward) for s in h.steps]
            ks = range(h.t + 1) if steps is None else [k for k in steps if k < h.t]
            for k in ks:
                hs.append(h.prefix(k))
                groups.append((str(task), k))
                runs.append((str(task), int(seed), i // n, k))
                won.append(at is not None)
                so_far.append(sum(rewards[:k]))
                tgt.append(sum(rewards[k:]))
                last.append(k == h.t)
    return Table(hs, groups, runs, np.array(won, bool), np.array(tgt, float),
                 np.array(so_far, float), np.array(last, bool))


def doomed(t: Table, suite: Any) -> np.ndarray:
    """States the menu-form planner cannot finish in the steps left (and that did not
    succeed anyway: :func:`studies.sweeps.offline.is_doomed`, the doomed-weight mask)."""
    from studies.sweeps.offline import is_doomed

    d = np.array([is_doomed(suite, h, True) for h in t.histories], bool)
    return d & ~t.success
