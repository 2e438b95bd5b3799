"""Targets (Eq. 7 with the reference's label bugs fixed), rows, task split, reading, card."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from amc.types import History, Step
from amc.value.data import (
    DatasetOptions,
    build_dataset,
    build_rows,
    histories_from_record,
    load_dataset_dir,
    read_trajectories,
    returns_to_go,
    split_tasks,
)
from amc.value.render import RenderOptions

OPTS = DatasetOptions(render=RenderOptions(history_k=2), val_fraction=0.0, tokenizer=None)


def traj(task: str, rewards: list[float], done: bool = True) -> History:
    steps = tuple(Step("r", f"a{i}", f"o{i}", r, done and i == len(rewards) - 1)
                  for i, r in enumerate(rewards))
    return History(task, "Goal: win.", steps)


def test_returns_to_go_sparse_dense_and_discounted() -> None:
    assert returns_to_go([0, 0, 1]) == [1, 1, 1, 0]  # sparse: every state sees R, terminal 0
    assert returns_to_go([0.1, 0.2, 0.3]) == pytest.approx([0.6, 0.5, 0.3, 0.0])  # dense
    # gamma < 1: the first future reward is undiscounted (exponent tau - t - 1)
    assert returns_to_go([1, 1, 1], 0.5) == pytest.approx([1.75, 1.5, 1.0, 0.0])
    assert returns_to_go([0, 0, 1], 0.9) == pytest.approx([0.81, 0.9, 1.0, 0.0])
    assert returns_to_go([0.5, -1.0]) == [-0.5, -1.0, 0.0]  # a failure penalty is an increment
    assert returns_to_go([]) == [0.0]


def test_rows_targets_terminal_and_truncated() -> None:
    rows = build_rows([traj("a", [0.0, 0.0, 1.0])], OPTS)["train"]
    assert [r["step"] for r in rows] == [0, 1, 2, 3]
    assert [r["target"] for r in rows] == [1.0, 1.0, 1.0, 0.0]
    assert [r["terminal"] for r in rows] == [False, False, False, True]
    assert [r["reward_so_far"] for r in rows] == [0.0, 0.0, 0.0, 1.0]
    assert all(r["success"] for r in rows)
    no_term = build_rows([traj("a", [0.0, 1.0])],
                         OPTS.model_copy(update={"include_terminal": False}))
    assert [r["step"] for r in no_term["train"]] == [0, 1]
    # A trajectory cut by the step budget (not done): the last state has no observed future.
    cut = build_rows([traj("a", [0.2, 0.0], done=False)], OPTS)["train"]
    assert [r["target"] for r in cut] == pytest.approx([0.2, 0.0, 0.0])
    assert not cut[-1]["terminal"] and not cut[-1]["success"]


def test_a_records_budget_reaches_every_rows_steps_left() -> None:
    rec = {"task_id": "a", "observation0": "Goal: win.", "budget": 4,
           "trajectories": [{"steps": [s.to_dict() for s in traj("a", [0.0, 1.0]).steps]}]}
    (h,) = histories_from_record(rec)
    opts = OPTS.model_copy(update={"render": RenderOptions(history_k=2, show_budget=True)})
    rows = build_rows([h], opts)["train"]
    assert [r["text"].split("[STEPS LEFT] ")[1].split("\n")[0] for r in rows] == [
        "4 of 4", "3 of 4", "2 of 4"]
    assert all("[STEPS LEFT]" not in r["text"] for r in build_rows([h], OPTS)["train"])


def test_keep_all_or_best_rollouts() -> None:
    hs = [traj("a", [0.0, 0.0]), traj("a", [0.0, 1.0]), traj("a", [1.0])]
    all_rows = build_rows(hs, OPTS)["train"]
    assert sorted({r["traj"] for r in all_rows}) == [0, 1, 2]
    best = build_rows(hs, OPTS.model_copy(update={"keep": "best"}))["train"]
    assert {r["traj"] for r in best} == {1}  # tie at 1.0 -> the first collected


def test_split_by_task_is_disjoint_and_seeded() -> None:
    ids = [str(i) for i in range(50)]
    opts = DatasetOptions(val_fraction=0.2, test_fraction=0.1, seed=3)
    s = split_tasks(ids, opts)
    assert len(s["validation"]) == 10 and len(s["test"]) == 5 and len(s["train"]) == 35
    assert set(s["train"]) | set(s["validation"]) | set(s["test"]) == set(ids)
    assert not (set(s["train"]) & set(s["validation"])) and not (set(s["test"]) & set(s["train"]))
    assert split_tasks(reversed(ids), opts) == s  # input order does not matter
    assert split_tasks(ids, opts.model_copy(update={"seed": 4})) != s
    with pytest.raises(ValueError, match="too few"):
        split_tasks(["1", "2"], DatasetOptions(val_fraction=0.5, test_fraction=0.5))


def test_jsonl_records_to_saved_dataset_with_card(tmp_path: Path, make_histories,
                                                  records_writer) -> None:
    hs = make_histories(n_tasks=10, rollouts=2)
    path = records_writer(hs, tmp_path / "results.jsonl")
    read = read_trajectories([path])
    assert len(read) == 20 and read[0].steps == hs[0].steps and read[0].task_id == hs[0].task_id
    card = build_dataset(read, tmp_path / "ds", DatasetOptions(val_fraction=0.3, tokenizer=None))
    dsd, render, card2 = load_dataset_dir(tmp_path / "ds")
    assert card == card2 and render == RenderOptions()
    assert len(dsd["train"]) + len(dsd["validation"]) == 20 * 4 and len(dsd["test"]) == 0
    tasks_train, tasks_val = set(dsd["train"]["task_id"]), set(dsd["validation"]["task_id"])
    assert not tasks_train & tasks_val and len(tasks_val) == 3
    assert card["splits"]["train"]["rows"] == len(dsd["train"])
    succ = {(h.task_id, i % 2): h.total_reward >= 1 for i, h in enumerate(hs)}
    expect = sum(v for (t, _), v in succ.items() if t in tasks_val) / 6
    assert card["splits"]["validation"]["success_rate"] == pytest.approx(expect)
    assert sum(card["splits"]["train"]["target_histogram"]["counts"]) == len(dsd["train"])
    assert "| train |" in (tmp_path / "ds" / "README.md").read_text()
    # Same inputs -> same content hash
    card3 = build_dataset(read, tmp_path / "ds2", DatasetOptions(val_fraction=0.3, tokenizer=None))
    assert card3["content_hash"] == card["content_hash"]


def test_bad_inputs_fail_with_one_line(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="not found"):
        read_trajectories([tmp_path / "nope.jsonl"])
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"trajectories": [{"steps": []}]}\n')
    with pytest.raises(ValueError, match="task_id or observation0"):
        read_trajectories([bad])
    bad.write_text("not json\n")
    with pytest.raises(ValueError, match="not JSON"):
        read_trajectories([bad])
    bad.write_text(json.dumps({"task_id": "1", "observation0": "x", "trajectories": [{}]}))
    with pytest.raises(ValueError, match="neither 'steps' nor 'turns'"):
        read_trajectories([bad])
