"""DAgger labels: the planner's action at every state a prior's own rollouts reached.

Behaviour cloning trains on the planner's states (and a noisy planner's); the fine-tuned prior
then reaches states of its own, where it agrees with the planner far less (covariate shift,
Ross et al. 2011). One DAgger round plays the frozen prior (``amc run``), replays each kept
rollout in the environment, and labels the state before each of its actions with the
planner's next action there. The prompt is rendered from the *recorded* history prefix -- the
text the prior saw -- with the replayed state's menu, exactly as :mod:`amc.sft.demos` renders
the planner's episodes; the pairs join the demonstrations (``demos.rollout_dirs``).

A rollout's pairs carry ``episode = len(demos.skills) + i`` (its index ``i`` among its task's
rollouts), so a pair's source is known from the pair alone (:func:`is_own_state`).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from amc.envs.benchmark import HistoryView, PlannerHooks
from amc.priors.planner_mix import load_planner
from amc.protocols import EnvSuite
from amc.sft.config import SFTOptions
from amc.sft.demos import Demo, build_demos, render, unseen
from amc.types import History


def read_rollouts(folder: str | Path) -> list[History]:
    """Every rollout of an ``amc run`` output folder (``*__seed*.jsonl`` or ``.jsonl.gz``; a
    torn last line, as a killed run leaves, is skipped), in file then record order."""
    from amc.value.data import histories_from_record

    files = sorted(Path(folder).glob("*__seed*.jsonl*"))
    if not files:
        raise FileNotFoundError(f"{folder}: no amc run seed files (*__seed*.jsonl[.gz])")
    out: list[History] = []
    for f in files:
        opener: Any = gzip.open if f.suffix == ".gz" else open
        with opener(f, "rt") as fh:
            for line in fh:
                if line.endswith("\n"):
                    out += histories_from_record(json.loads(line))
    return out


def label_rollout(opts: SFTOptions, suite: EnvSuite, hooks: PlannerHooks, rollout: History,
                  episode: int) -> Iterator[Demo]:
    """The planner-labelled states of one recorded rollout (before each of its actions).

    Raises if the environment, replaying the recorded actions, does not reproduce the recorded
    observations: the labels would then belong to other states."""
    env = suite.make()
    try:
        first = env.reset(rollout.task_id)
        if first != rollout.prefix(0).observation:
            raise ValueError(f"task {rollout.task_id}: the environment's first observation "
                             "differs from the rollout's (another environment's options?)")
        for t, step in enumerate(rollout.steps):
            menu = hooks.menu(env) if hooks.replay else env.valid_actions()
            seen = rollout.prefix(t).with_valid_actions(menu)
            action = hooks.next_action(env if hooks.replay else HistoryView(suite, seen))
            if action is None:
                return
            if hooks.to_menu is not None:
                action = hooks.to_menu(env, action)
            yield Demo(rollout.task_id, episode, t, render(opts, seen), f" {action}\n")
            res = env.step(step.action)
            if res.observation != step.observation:
                raise ValueError(f"task {rollout.task_id} step {t}: replaying "
                                 f"{step.action!r} gives another observation than recorded")
            if res.done:
                return
    finally:
        env.close()


def rollout_demos(opts: SFTOptions, suite: EnvSuite, hooks: PlannerHooks) -> list[Demo]:
    """The labelled states of every rollout under ``demos.rollout_dirs`` (folder order)."""
    out: list[Demo] = []
    per_task: dict[str, int] = {}
    for folder in opts.demos.rollout_dirs:
        for rollout in read_rollouts(folder):
            i = per_task.get(rollout.task_id, 0)
            per_task[rollout.task_id] = i + 1
            out += label_rollout(opts, suite, hooks, rollout, len(opts.demos.skills) + i)
    return out


def all_demos(opts: SFTOptions, suite: EnvSuite) -> list[Demo]:
    """The planner's episodes (:func:`~amc.sft.demos.build_demos`), then the labelled states
    of ``demos.rollout_dirs``; a prompt already labelled for its task is kept once."""
    seen: dict[str, set[str]] = {}
    out = build_demos(opts, suite, seen=seen)
    return out + unseen(rollout_demos(opts, suite, load_planner(opts.env)), seen)


def is_own_state(demo: Demo, opts: SFTOptions) -> bool:
    """Whether a pair labels a state a prior's rollout reached (not a planner's episode)."""
    return demo.episode >= len(opts.demos.skills)
