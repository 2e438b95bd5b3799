"""The declared LLM test set: its power calculation, its tasks, and their exclusion from every
later collection of the study's params files (real TextCraft split, real collect configuration)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from amc.pipeline import collect
from amc.pipeline.params import load_params
from amc.registry import ENVIRONMENTS
from amc.stats import tasks_for_power
from studies.llm_regime.testset import (
    DECLARED,
    choose_train_tasks,
    per_task_differences,
    power_calculation,
)

REPO = Path(__file__).resolve().parents[3]
DECLARATION = DECLARED / "llm-regime-testset60.json"
LLM = REPO / "configs/llm-regime/params.yaml"


@pytest.fixture(scope="module")
def declared() -> dict:
    return json.loads(DECLARATION.read_text())


def test_tasks_needed_is_where_simulated_t_power_crosses_80_percent() -> None:
    sd, effect = 0.15, 0.06
    n = tasks_for_power(effect, sd)
    rng = np.random.default_rng(0)
    from scipy.stats import t

    def rate(k: int) -> float:
        d = rng.normal(effect, sd, size=(20_000, k))
        tt = d.mean(1) / (d.std(1, ddof=1) / math.sqrt(k))
        return float((np.abs(tt) > t.ppf(0.975, k - 1)).mean())

    assert rate(n) >= 0.8 - 0.01 and rate(n - 4) < 0.8  # s.e. of a rate ~0.003
    assert 45 <= n <= 60  # (z_.975 + z_.8)^2 sd^2 / effect^2 = 49 plus the t correction


def test_declared_power_is_what_the_kept_pilot_gives(declared: dict) -> None:
    d = per_task_differences(REPO / "evidence/llm-regime/eval", "smc@4+challenger", "bon@4",
                             "oracle_best", [0, 1, 2])
    assert len(d) == 12
    pw = power_calculation(list(d.values()), effect=0.06, n_plan=declared["power"]["n_plan"])
    assert pw == declared["power"]
    assert pw["t_power_at_plan"] >= 0.8 and pw["simulated"]["sign_flip_power"] >= 0.8


def test_declared_tasks_are_the_test_split_and_never_used_train_tasks(declared: dict) -> None:
    p = load_params(LLM)
    suite = ENVIRONMENTS.build(p.env.name, p.env.options)
    test, train = suite.task_ids("test"), suite.task_ids("train")
    assert declared["test_split_tasks"] == test and len(test) == 29
    extra = declared["train_split_tasks"]
    assert len(declared["tasks"]) == len(set(declared["tasks"])) >= 60
    assert set(extra) <= set(train) and not set(extra) & set(declared["used_train_tasks"])
    kept = REPO / "evidence/llm-regime/trajectories/bon@15__seed0.jsonl"
    used = {json.loads(line)["task_id"] for line in kept.read_text().splitlines()}
    assert used == set(declared["used_train_tasks"]) and len(used) == 24
    assert declared["seeds"] == [0, 1, 2]
    assert declared["primary"]["a"] == "smc@4+challenger" and declared["primary"]["b"] == "bon@4"
    assert choose_train_tasks(train, sorted(used), len(extra), 0) == extra


def test_every_collection_skips_the_declared_tasks(declared: dict) -> None:
    p = load_params(LLM)
    cfg = collect.run_config(p)
    # the kept collection's 24 tasks are untouched (they precede every declared train task)
    assert cfg.task_ids is not None and len(cfg.task_ids) == 24
    assert set(cfg.task_ids) == set(declared["used_train_tasks"])
    everything = p.model_copy(update={"collect": p.collect.model_copy(
        update={"max_tasks": None})})
    ids = collect.all_tasks(everything)
    assert not set(ids) & set(declared["tasks"]) and len(ids) == 117 - 31
    # also a collection on the test split, or of deeper goals (task ids name the same goals)
    deeper = everything.model_copy(update={
        "env": p.env.model_copy(update={"options": {**p.env.options, "max_depth": 2}}),
        "collect": everything.collect.model_copy(update={"split": "test"})})
    assert not set(collect.all_tasks(deeper)) & set(declared["tasks"])
