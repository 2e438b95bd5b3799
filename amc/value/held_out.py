"""Any registered value on a value dataset's held-out states: its within-(task, step) AUC.

The learned value's training reports how it ranks the states of one task at one step (the
comparison resampling makes, :func:`~amc.value.metrics.auc_within_by_step`). A zero-shot value
has no training, so nothing measured it: the number-asking LLM value turned out to be a
constant. This module scores *the same states* with any value of the registry -- the LLM
values through a prior, the learned value from its model -- and reports the same figures.

The dataset stores rendered text, not histories, so the states are rebuilt from the
trajectory files the dataset was built from: row ``(task_id, traj, step)`` is the prefix of
``step`` steps of the ``traj``-th trajectory of ``task_id`` in file order (the order
:func:`~amc.value.data.build_rows` numbers them in). Each row's recorded outcome is checked
against the rebuilt trajectory, so other files (or another order) are an error, not a
silently different state set. Every value renders the history its own way.

Reported: the number of states, groups and value calls; ``auc_within`` over all steps and
``auc_within_by_step`` (of the implied return ``reward_so_far + f``, as in training: where
rewards come only at the end, as in TextCraft, that is ``f`` itself on non-terminal states);
``constant_share``, the share of (task, step) groups of two or more states the value scored all
equal (:func:`~amc.smc.value_spread.is_constant`); the rest of
:func:`~amc.value.metrics.value_metrics`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field

from amc.config import EnvConfig, Frozen, PriorConfig, ValueConfig
from amc.protocols import ReportsUsage, ValueFunction
from amc.smc.value_spread import is_constant
from amc.types import History, Usage
from amc.value.metrics import auc_within_by_step, finite, value_metrics


@dataclass(frozen=True)
class HeldOutStates:
    """The states of one split, with what the metrics need."""

    histories: tuple[History, ...]
    task_ids: tuple[str, ...]
    steps: tuple[int, ...]
    target: np.ndarray
    reward_so_far: np.ndarray
    success: np.ndarray

    @property
    def groups(self) -> list[tuple[str, int]]:
        """(task, step) of every state."""
        return list(zip(self.task_ids, self.steps, strict=True))


def held_out_states(rows: Sequence[Mapping[str, Any]], histories: Sequence[History],
                    success_threshold: float) -> HeldOutStates:
    """The states of dataset ``rows`` rebuilt from ``histories`` (see the module docstring)."""
    by_task: dict[str, list[History]] = {}
    for h in histories:
        by_task.setdefault(h.task_id, []).append(h)
    states = []
    for r in rows:
        trajs = by_task.get(str(r["task_id"]), [])
        traj, step = int(r["traj"]), int(r["step"])
        if traj >= len(trajs) or step > len(trajs[traj].steps) or (
                trajs[traj].total_reward >= success_threshold) != bool(r["success"]):
            raise ValueError(f"row (task {r['task_id']}, trajectory {traj}, step {step}) is not "
                             "in the trajectories given: pass the files the dataset was built "
                             "from, in the same order")
        states.append(trajs[traj].prefix(step))
    col = {k: np.array([r[k] for r in rows], dtype=float)
           for k in ("target", "reward_so_far", "success")}
    return HeldOutStates(tuple(states), tuple(str(r["task_id"]) for r in rows),
                         tuple(int(r["step"]) for r in rows), col["target"],
                         col["reward_so_far"], col["success"].astype(bool))


async def score_all(value: ValueFunction, histories: Sequence[History],
                    batch_size: int = 64) -> tuple[list[float], Usage]:
    """Every history's value, ``batch_size`` at a time, and the calls' usage (if reported)."""
    scores: list[float] = []
    usage = Usage()
    for i in range(0, len(histories), batch_size):
        batch = histories[i:i + batch_size]
        if isinstance(value, ReportsUsage):
            got, u = await value.score_with_usage(batch)
            usage = usage + u
        else:
            got = await value.score(batch)
        scores.extend(float(x) for x in got)
    return scores, usage


def constant_share(scores: Sequence[float], groups: Sequence[tuple[str, int]]) -> float | None:
    """Share of (task, step) groups of >= 2 states scored all equal (None: no such group)."""
    by: dict[tuple[str, int], list[float]] = {}
    for s, g in zip(scores, groups, strict=True):
        by.setdefault(g, []).append(s)
    multi = [v for v in by.values() if len(v) >= 2]
    return sum(is_constant(v) for v in multi) / len(multi) if multi else None


def held_out_report(states: HeldOutStates, scores: Sequence[float],
                    usage: Usage = Usage()) -> dict[str, Any]:
    """The figures of ``scores`` on ``states`` (see the module docstring); JSON-ready."""
    pred, groups = np.asarray(scores, float), states.groups
    metrics = value_metrics(pred, states.target, states.reward_so_far, states.success, groups)
    by_step = auc_within_by_step(pred, states.reward_so_far, states.success, groups)
    auc = metrics.pop("auc_within")
    return {"states": len(pred), "groups": len(set(groups)), "calls": usage.calls,
            "prompt_tokens": usage.prompt_tokens,
            "auc_within": auc if math.isfinite(auc) else None,
            "auc_within_by_step": by_step,
            "constant_share": constant_share(pred.tolist(), groups),
            "score_min": float(pred.min()) if len(pred) else None,
            "score_max": float(pred.max()) if len(pred) else None,
            "metrics": finite(metrics)}


def dataset_split_rows(dataset: str | Path, split: str) -> tuple[list[dict[str, Any]], float]:
    """The rows of a dataset's split and its success threshold (from the dataset's card)."""
    from amc.value.data import load_dataset_dir

    dsd, _, card = load_dataset_dir(dataset)
    if split not in dsd:
        raise ValueError(f"dataset {dataset} has no split {split!r}")
    cols = dsd[split].to_dict()
    rows = [dict(zip(cols, vals, strict=True)) for vals in zip(*cols.values(), strict=True)]
    return rows, float(card.get("options", {}).get("success_threshold", 1.0))


class HeldOutConfig(Frozen):
    """Which value scores the held-out states, and the prior and environment it is built with."""

    env: EnvConfig = EnvConfig()
    """The benchmark the dataset's trajectories come from (renders the states, sets the range)."""
    prior: PriorConfig = PriorConfig(name="embedded")
    """The prior whose client the LLM values call (and whose rollouts the rollout value runs)."""
    value: ValueConfig = ValueConfig(name="zero-shot-yesno")
    """The value registry name and options (e.g. learned with options.model)."""
    split: str = "test"
    """The dataset split whose states are scored."""
    beta: float = Field(1.0, gt=0)
    """beta given to value factories that take it (exact, rollout)."""
    batch_size: int = Field(64, ge=1)
    """States per score() call."""


async def held_out_auc(cfg: HeldOutConfig, dataset: str | Path,
                       trajectories: Sequence[str | Path]) -> dict[str, Any]:
    """Build the prior and the value, score the split's states, and report (closed after)."""
    from amc.registry import ENVIRONMENTS, PRIORS, VALUES, load_builtin_components
    from amc.value.data import read_trajectories

    rows, threshold = dataset_split_rows(dataset, cfg.split)
    states = held_out_states(rows, read_trajectories(list(trajectories)), threshold)
    load_builtin_components()
    ctx: dict[str, Any] = {"env_name": cfg.env.name, "env_options": ENVIRONMENTS.validate(
        cfg.env.name, cfg.env.options)}
    prior = PRIORS.build(cfg.prior.name, cfg.prior.options or None, **ctx)
    try:
        value = VALUES.build(cfg.value.name, cfg.value.options or None, beta=cfg.beta,
                             prior=prior, **ctx)
        try:
            scores, usage = await score_all(value, states.histories, cfg.batch_size)
        finally:
            await value.aclose()
    finally:
        await prior.aclose()
    return {"value": cfg.value.model_dump(mode="json"), "prior": cfg.prior.name,
            "dataset": str(dataset), "split": cfg.split, **held_out_report(states, scores, usage)}
