"""Demonstrations for behaviour cloning: the planner labels the states a prior visits.

For each allowed task and each skill q of :class:`~amc.sft.config.DemoOptions` one episode is
played: at every state the planner's next action (in the menu's own form) is the label, and
the episode then takes that action with probability q, else a uniformly random valid action
(the ``planner-mix`` prior's rule). q = 1 gives the expert's own states; lower q gives the
recovery states a noisy prior reaches (DAgger-style), still labelled with the planner's action.

Each pair is rendered with :func:`~amc.priors.prompts.completion_prompt` and exactly the
options the ``hf`` prior will use at run time (:meth:`~amc.sft.config.SFTOptions.prior_options`),
so the model is trained on the prompt it will see. A pair is ``(prompt, completion)`` with
``completion = " " + action + "\\n"``: the prompt ends with ``Action:`` and the prior stops at
the newline.

No leakage: tasks come from ``demos.split`` only (``train``), minus every task listed in an
exclusion file (the declared validation and test sets); :func:`check_no_leak` re-checks a
finished set against them, and the stage refuses a set that fails.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from amc.envs.benchmark import HistoryView, PlannerHooks
from amc.priors.planner_mix import load_planner
from amc.priors.prompts import completion_prompt
from amc.protocols import EnvSuite
from amc.sft.config import SFTOptions
from amc.types import History, Step


@dataclass(frozen=True)
class Demo:
    """One labelled state: the prompt the prior sees and the planner's action."""

    task_id: str
    episode: int
    """Index into ``demos.skills`` of the episode that reached the state."""
    t: int
    """Steps taken before the state."""
    prompt: str
    completion: str
    """``" " + action + "\\n"``: what the model must write after ``Action:``."""


def read_task_list(path: str | Path) -> list[str]:
    """Task ids of a held-out file: a JSON list, or a record with ``tasks`` (list, or a mapping
    of lists, e.g. per depth)."""
    data = json.loads(Path(path).read_text())
    if isinstance(data, dict):
        data = data.get("tasks")
    if isinstance(data, dict):
        data = [t for ids in data.values() for t in ids]
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a list of task ids or a record with 'tasks'")
    return [str(t) for t in data]


def excluded_tasks(opts: SFTOptions) -> set[str]:
    """Every task id of the exclusion files (never demonstrated)."""
    return {t for f in opts.demos.exclude_tasks_files for t in read_task_list(f)}


def demo_tasks(opts: SFTOptions, suite: EnvSuite) -> list[str]:
    """The tasks demonstrated: ``demos.split`` minus the exclusions, first ``max_tasks``."""
    banned = excluded_tasks(opts)
    tasks = [t for t in suite.task_ids(opts.demos.split) if t not in banned]
    return tasks[: opts.demos.max_tasks]


def render(opts: SFTOptions, history: History) -> str:
    """The run-time prompt of ``history`` (its menu attached) under the prior's options."""
    return completion_prompt(history, opts.env, opts.prompt, max_steps=opts.max_history_steps,
                             menu_limit=opts.menu_limit, few_shot=opts.few_shot,
                             instruction=opts.instruction)


def episode(opts: SFTOptions, suite: EnvSuite, hooks: PlannerHooks, task_id: str, k: int,
            rng: np.random.Generator) -> Iterator[Demo]:
    """The labelled states of one episode of ``task_id`` at skill ``demos.skills[k]``."""
    q = opts.demos.skills[k]
    env = suite.make()
    try:
        history = History(task_id, env.reset(task_id))
        for t in range(opts.demos.max_steps):
            menu = hooks.menu(env) if hooks.replay else env.valid_actions()
            seen = history.with_valid_actions(menu)
            action = hooks.next_action(env if hooks.replay else HistoryView(suite, seen))
            if action is None:
                return
            if hooks.to_menu is not None:
                action = hooks.to_menu(env, action)
            yield Demo(task_id, k, t, render(opts, seen), f" {action}\n")
            # the coin is drawn at every step, whatever q, so episodes share their draws
            take = action if rng.random() < q or not menu else menu[int(rng.integers(len(menu)))]
            res = env.step(take)
            history = history.extend(Step(raw_text=f"Action: {take}", action=take,
                                          observation=res.observation, reward=res.reward,
                                          done=res.done))
            if res.done:
                return
    finally:
        env.close()


def build_demos(opts: SFTOptions, suite: EnvSuite, progress: Any = None,
                seen: dict[str, set[str]] | None = None) -> list[Demo]:
    """Every task's episodes; a prompt already labelled for its task is kept once (``seen``,
    task -> prompts, is updated: :func:`amc.sft.dagger.all_demos` goes on with it)."""
    hooks = load_planner(opts.env)
    out: list[Demo] = []
    seen = {} if seen is None else seen
    for i, tid in enumerate(demo_tasks(opts, suite)):
        for k in range(len(opts.demos.skills)):
            rng = np.random.default_rng([opts.demos.seed, i, k])
            out += unseen(episode(opts, suite, hooks, tid, k, rng), seen)
        if progress is not None:
            progress(i + 1)
    return out


def unseen(demos: Iterable[Demo], seen: dict[str, set[str]]) -> list[Demo]:
    """The pairs whose prompt their task has not labelled yet (``seen`` is updated)."""
    out = []
    for d in demos:
        if d.prompt not in seen.setdefault(d.task_id, set()):
            seen[d.task_id].add(d.prompt)
            out.append(d)
    return out


def check_no_leak(demos: list[Demo], opts: SFTOptions, suite: EnvSuite) -> None:
    """Raise if a demonstration's task is excluded or outside ``demos.split``."""
    allowed = set(suite.task_ids(opts.demos.split))
    banned = excluded_tasks(opts)
    bad = sorted({d.task_id for d in demos if d.task_id in banned or d.task_id not in allowed},
                 key=str)
    if bad:
        raise ValueError(f"demonstrations leak held-out or non-{opts.demos.split} tasks: "
                         f"{', '.join(bad[:10])}")


def write_demos(demos: list[Demo], path: Path) -> str:
    """One JSON line per pair; returns the file's sha256 (the data hash MLflow records)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(asdict(d), sort_keys=True) + "\n" for d in demos)
    tmp = path.with_suffix(".part")
    tmp.write_text(text)
    tmp.rename(path)
    return hashlib.sha256(text.encode()).hexdigest()


def read_demos(path: Path) -> list[Demo]:
    """The pairs :func:`write_demos` wrote."""
    with open(path) as f:
        return [Demo(**json.loads(line)) for line in f if line.strip()]
