"""Shared helpers for driver tests: run the synthetic problem many times."""

from __future__ import annotations

import asyncio
from collections import defaultdict

import numpy as np
import pytest

from amc.config import SMCConfig
from amc.envs.synthetic import SyntheticOptions, SyntheticTree
from amc.registry import ENVIRONMENTS, PRIORS, VALUES
from amc.smc.records import TaskResult
from amc.smc.sampler import run_task
from amc.smc.weights import LogWeights

TASK = "18"  # a tree whose posterior is far from its prior (TV 0.31 at beta = 0.5)
BETA = 0.5


@pytest.fixture(scope="session")
def synth():
    """Suite, prior and the two values (exact, zero) of the synthetic problem."""
    suite = ENVIRONMENTS.build("synthetic", {})
    ctx = {"env_name": "synthetic", "env_options": suite.options, "beta": BETA}
    return {
        "suite": suite,
        "prior": PRIORS.build("synthetic", None, **ctx),
        "exact": VALUES.build("exact", None, **ctx),
        "zero": VALUES.build("none", None, **ctx),
        "tree": SyntheticTree.build(TASK, SyntheticOptions()),
    }


def leaf(record) -> tuple[int, ...]:
    return tuple(record.steps[-1].info["node"])


def run_many(synth, value: str, smc: SMCConfig, runs: int, task: str = TASK) -> list[TaskResult]:
    async def go():
        return [await run_task(suite=synth["suite"], prior=synth["prior"], value=synth[value],
                               task_id=task, smc=smc, seed=s) for s in range(runs)]
    return asyncio.run(go())


def weighted_leaf_distribution(results: list[TaskResult]) -> dict[tuple[int, ...], float]:
    """Average over runs of each run's final weighted empirical distribution over leaves."""
    acc: dict[tuple[int, ...], float] = defaultdict(float)
    for r in results:
        pop = r.population
        W = LogWeights(np.array([p.final_log_weight for p in pop])).normalised()
        for p, w in zip(pop, W, strict=True):
            acc[leaf(p)] += w / len(results)
    return dict(acc)


def total_variation(p: dict, q: dict) -> float:
    keys = set(p) | set(q)
    return 0.5 * sum(abs(p.get(k, 0.0) - q.get(k, 0.0)) for k in keys)


@pytest.fixture(scope="session")
def h():
    """The helpers above, for test modules (importlib import mode cannot import conftest)."""
    import types

    return types.SimpleNamespace(
        BETA=BETA, TASK=TASK, run_many=run_many, total_variation=total_variation,
        weighted_leaf_distribution=weighted_leaf_distribution, leaf=leaf,
    )
