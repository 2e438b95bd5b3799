"""Held-out task sets: ``collect.exclude_tasks_files`` keeps their tasks out of every collection
(scoped by environment and task identity), and ``evaluate.tasks_file`` evaluates exactly them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from amc.pipeline import collect, evaluate
from amc.pipeline.params import load_params
from amc.registry import ENVIRONMENTS


def test_a_held_out_set_applies_only_to_its_environment_and_task_identity(
        tmp_path: Path) -> None:
    dec = {"env": {"name": "textcraft", "identity": {
        "recipe_source": "minecraft-data", "minecraft_version": "1.16.1", "split": "default",
        "splits_dir": None}}, "tasks": ["5", "7"]}
    (tmp_path / "a.json").write_text(json.dumps(dec))
    (tmp_path / "anywhere.json").write_text(json.dumps({"tasks": [9]}))
    opts = ENVIRONMENTS.validate("textcraft", {}).model_dump(mode="json")
    assert collect.task_identity("textcraft", opts) == dec["env"]["identity"]
    files = [tmp_path / "a.json"]
    assert collect.excluded_tasks("textcraft", opts, files) == {"5", "7"}
    assert collect.excluded_tasks("textcraft", {**opts, "split": "paper"}, files) == set()
    assert collect.excluded_tasks("synthetic", {}, files) == set()
    both = [*files, tmp_path / "anywhere.json"]  # no env: reserved for every environment
    assert collect.excluded_tasks("synthetic", {}, both) == {"9"}
    assert collect.excluded_tasks("textcraft", opts, both) == {"5", "7", "9"}


@pytest.mark.parametrize("body", ["[1, 2]", "{\"task\": [1]}", None])
def test_a_file_that_is_no_held_out_set_is_refused_naming_the_key(tmp_path: Path,
                                                                   body: str | None) -> None:
    f = tmp_path / "set.json"
    if body is not None:
        f.write_text(body)
    with pytest.raises(ValueError, match=r"collect.exclude_tasks_files: .*set.json"):
        collect.excluded_tasks("synthetic", {}, [f])


def test_collect_leaves_the_held_out_tasks_out_before_max_tasks(workdir: Path) -> None:
    p = load_params("params.yaml")
    split = collect.all_tasks(p)
    assert collect.run_config(p).task_ids is None  # no held-out set: the split as it is
    held = [split[0], split[3]]
    (workdir / "held.json").write_text(json.dumps({"tasks": held}))
    c = p.collect.model_copy(update={"exclude_tasks_files": (Path("held.json"),),
                                     "max_tasks": 5})
    ids = collect.run_config(p.model_copy(update={"collect": c})).task_ids
    assert ids == tuple(t for t in split if t not in held)[:5]


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
