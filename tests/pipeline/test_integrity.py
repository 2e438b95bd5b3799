"""Integrity where data is read (issue 64): the dataset applies the collect section as it is now
(late held-out sets, a smaller max_tasks) and refuses a collection missing a selected task;
a task recorded twice in a collection is refused with file:line; evaluate refuses duplicate
declared tasks before any work and a record is complete only when every requested method ran.

Real synthetic collections (4 tasks x 2 rollouts) in a temp workdir with its own MLflow store.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from amc.pipeline import artifacts, collect, dataset, evaluate
from amc.pipeline.params import load_params
from tests.pipeline.conftest import TOY_PARAMS

SMALL = {**TOY_PARAMS, "collect": {"split": "train", "max_tasks": 4, "rollouts": 2, "seeds": [0]}}


def write(**collect_section: object) -> None:
    Path("params.yaml").write_text(yaml.safe_dump(
        {**SMALL, "collect": {**SMALL["collect"], **collect_section}}))


def trained_tasks() -> set[str]:
    from amc.value.data import load_dataset_dir

    dsd, _, _ = load_dataset_dir("data/dataset")
    return {t for split in dsd.values() for t in split["task_id"]}


def test_the_dataset_applies_todays_held_out_sets_and_max_tasks(workdir: Path) -> None:
    write()
    p = load_params()
    collect.run(p)
    tasks = artifacts.collect_tasks(p)
    assert len(tasks) == 4
    dataset.run(p)
    assert trained_tasks() == set(tasks)
    # a held-out set names a collected task after the collection; max_tasks 3 selects the rest
    Path("held.json").write_text(json.dumps({"tasks": [tasks[0]]}))
    write(exclude_tasks_files=["held.json"], max_tasks=3)
    card = dataset.run(load_params())
    assert trained_tasks() == set(tasks[1:]) and card["left_out"] == [tasks[0]]
    assert artifacts.source(Path("data/dataset"))["left_out"] == [tasks[0]]
    assert "left out 1 collected task(s) the collect section no longer selects" \
        in dataset.line(card) and tasks[0] in dataset.line(card)
    # a collect rerun with a smaller max_tasks: its files still hold 4 tasks, the dataset 2
    write(max_tasks=2)
    collect.run(load_params())
    dataset.run(load_params())
    assert trained_tasks() == set(tasks[:2])
    # held-out sets move a task never collected into the selection: refused, naming the key
    Path("held.json").write_text(json.dumps({"tasks": tasks[:3]}))
    write(exclude_tasks_files=["held.json"], max_tasks=2)
    with pytest.raises(ValueError, match=r"^collect.exclude_tasks_files: changed since the "
                                         r"collection in .* lacks 1 task\(s\) .*rerun collect"):
        dataset.run(load_params())
    write(max_tasks=5)  # the last collection took 2
    with pytest.raises(ValueError, match=r"^collect.max_tasks: changed since the collection"):
        dataset.run(load_params())


def test_a_task_recorded_twice_in_a_collection_is_refused_with_file_and_line(
        workdir: Path) -> None:
    write()
    p = load_params()
    res = collect.run(p)
    path = res.files[0]
    lines = path.read_text().splitlines()
    path.write_text("\n".join([*lines, lines[1]]) + "\n")
    with pytest.raises(ValueError, match=rf"{path}:5: task '{json.loads(lines[1])['task_id']}'"
                                         r" is recorded twice \(line 2\)"):
        dataset.run(p)


def test_duplicate_declared_tasks_are_refused_before_the_record_is_touched(
        workdir: Path) -> None:
    Path("set.json").write_text(json.dumps({"tasks": ["1", "1", "2"]}))
    params = {**TOY_PARAMS, "evaluate": {**TOY_PARAMS["evaluate"], "tasks_file": "set.json",
                                         "methods": ["bon"]}}
    Path("params.yaml").write_text(yaml.safe_dump(params))
    p = load_params()
    with pytest.raises(ValueError, match=r"^evaluate.tasks_file: .*set.json lists task '1' "
                                         r"twice"):
        evaluate.plan(p)
    Path("set.json").write_text(json.dumps({"tasks": ["1", "nope"]}))  # it would fail to run
    with pytest.raises(ValueError, match=r"^evaluate.tasks_file: synthetic has no task 'nope'"):
        evaluate.plan(p)
    assert not p.evaluate.out_dir.exists()  # refused before the record was marked running


def test_a_record_missing_a_requested_method_is_incomplete_and_a_repeat_is_refused(
        workdir: Path) -> None:
    params = {**TOY_PARAMS, "evaluate": {**TOY_PARAMS["evaluate"], "methods": ["react", "bon"],
                                         "max_tasks": 2, "seeds": [0]}}
    Path("params.yaml").write_text(yaml.safe_dump(params))
    p = load_params()
    ev = evaluate.evaluate(p, progress=False)
    assert ev["status"] == "complete"
    # the plan of an older code or a hand edit lost bon's specs: the record must say so
    plan = json.loads((p.evaluate.out_dir / "plan.json").read_text())
    plan["methods"] = [m for m in plan["methods"] if m["role"] != "bon"]
    (p.evaluate.out_dir / "plan.json").write_text(json.dumps(plan))
    ev = evaluate.finalize(p)
    assert ev["status"] == "incomplete"
    assert any("bon: requested in evaluate.methods, but no method of it ran" in x
               for x in ev["problems"])
    # a task recorded twice in a results file: refused where the evaluation reads it
    path = p.evaluate.out_dir / "react__seed0.jsonl"
    path.write_text(path.read_text() + path.read_text().splitlines()[0] + "\n")
    with pytest.raises(ValueError, match=rf"{path}:3: task .* is recorded twice \(line 1"):
        evaluate.finalize(p)
    # and by a rerun before any unit runs: bon (second) is damaged, react lacks a task
    bon = p.evaluate.out_dir / "bon@8__seed0.jsonl"
    bon.write_text(bon.read_text() + bon.read_text().splitlines()[0] + "\n")
    path.write_text(path.read_text().splitlines()[1] + "\n")
    with pytest.raises(ValueError, match=rf"{bon}:3: task .* is recorded twice"):
        evaluate.evaluate(p, progress=False)
    assert len(path.read_text().splitlines()) == 1  # react's missing task did not run first
