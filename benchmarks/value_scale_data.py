"""Cheap trajectories for value training at scale: TextCraft, ``random-valid`` prior, bon@G.

The value model's quality-vs-size curve needs tens of thousands of labelled states. A uniformly
random valid action on TextCraft (dense reward: normalised inventory-value increments) costs no
model calls, and its Monte-Carlo returns-to-go vary with recipe depth and progress, so the target
is learnable from the rendered text. This module runs Best-of-G through the ordinary runner
(:func:`amc.runner.run_methods`, resumable JSON lines) and turns the results into a value
dataset (:func:`amc.value.data.build_dataset`).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from pydantic import Field

from amc.config import EnvConfig, Frozen, PriorConfig, RunConfig, SMCConfig
from amc.results import results_path


class CollectOptions(Frozen):
    """What to collect: tasks, rollouts per task, steps, seeds."""

    max_tasks: int = Field(150, ge=1)
    """First tasks of the TextCraft train split."""
    rollouts: int = Field(16, ge=1)
    """G: random-valid rollouts per task (bon@G)."""
    max_steps: int = Field(10, ge=1)
    """Steps per rollout."""
    seeds: tuple[int, ...] = (0,)
    """Run seeds (each adds G rollouts per task)."""
    max_depth: int = Field(4, ge=1)
    """Deepest crafting depth of a task (deeper recipes: fewer successes, more varied targets)."""


def run_config(opts: CollectOptions, out_dir: str | Path) -> RunConfig:
    """The ``amc run`` configuration of the collection."""
    env = EnvConfig(name="textcraft", options={"reward": "dense", "max_depth": opts.max_depth})
    return RunConfig(env=env, prior=PriorConfig(name="random-valid"),
                     smc=SMCConfig(max_steps=opts.max_steps), methods=(f"bon@{opts.rollouts}",),
                     split="train", max_tasks=opts.max_tasks, seeds=opts.seeds,
                     out_dir=Path(out_dir))


def collect(opts: CollectOptions, out_dir: str | Path, progress: bool = True) -> list[Path]:
    """Run (or resume) the collection; returns the JSON-lines result files."""
    from amc.registry import load_builtin_components
    from amc.runner import run_methods

    load_builtin_components()
    cfg = run_config(opts, out_dir)
    asyncio.run(run_methods(cfg, progress=progress))
    return [results_path(cfg.out_dir, f"bon@{opts.rollouts}", s) for s in opts.seeds]
