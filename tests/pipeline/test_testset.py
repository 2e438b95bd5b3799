"""The declared LLM test set: its power calculation, its tasks, and their exclusion from every
later collection (real TextCraft split, real collect configuration)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from amc.pipeline import collect, evaluate
from amc.pipeline.params import load_params
from amc.pipeline.testset import (
    DECLARED,
    choose_train_tasks,
    excluded_tasks,
    per_task_differences,
    power_calculation,
)
from amc.registry import ENVIRONMENTS
from amc.stats import tasks_for_power

REPO = Path(__file__).resolve().parents[2]
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


def test_a_declaration_applies_only_to_its_environment_and_task_identity(tmp_path: Path) -> None:
    dec = {"env": {"name": "textcraft", "identity": {
        "recipe_source": "minecraft-data", "minecraft_version": "1.16.1", "split": "default",
        "splits_dir": None}}, "tasks": ["5", "7"]}
    (tmp_path / "a.json").write_text(json.dumps(dec))
    opts = ENVIRONMENTS.validate("textcraft", {}).model_dump(mode="json")
    assert excluded_tasks("textcraft", opts, tmp_path) == {"5", "7"}
    assert excluded_tasks("textcraft", {**opts, "split": "paper"}, tmp_path) == set()
    assert excluded_tasks("synthetic", {}, tmp_path) == set()


def test_evaluate_runs_exactly_the_declared_tasks_in_paired_blocks(workdir: Path) -> None:
    (workdir / "set.json").write_text(json.dumps({"tasks": ["3", "10001", "0"]}))
    p = load_params("params.yaml")
    e = p.evaluate.model_copy(update={"tasks_file": Path("set.json"), "methods": ("bon",),
                                      "block_tasks": 2, "seeds": (0, 1)})
    p = p.model_copy(update={"evaluate": e})
    pl = evaluate.plan(p)
    assert pl["tasks"] == ["3", "10001", "0"]
    runs = evaluate.blocks(evaluate.run_config(p, pl), 2)
    assert [(r.seeds, r.task_ids) for r in runs] == [
        ((0,), ("3", "10001")), ((0,), ("0",)),
        ((1,), ("3", "10001")), ((1,), ("0",))]
    (workdir / "bad.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="not a test-set declaration"):
        evaluate.plan(p.model_copy(update={"evaluate": e.model_copy(
            update={"tasks_file": Path("bad.json")})}))
