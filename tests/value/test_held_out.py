"""Any registered value on a dataset's held-out states: the states are the dataset's, the AUC is
within (task, step), a constant value is seen as one, and other trajectories are refused."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from amc.cli import app
from amc.priors.openai import OpenAIOptions, OpenAIPrior
from amc.registry import VALUES
from amc.types import History
from amc.value.data import DatasetOptions, build_dataset, read_trajectories
from amc.value.held_out import (
    HeldOutStates,
    constant_share,
    dataset_split_rows,
    held_out_report,
    held_out_states,
    score_all,
)
from amc.value.render import RenderOptions
from tests.priors.loopback import LoopbackServer

runner = CliRunner()
OPTIONS = DatasetOptions(test_fraction=0.5, val_fraction=0.0, tokenizer=None,
                         success_threshold=0.8, render=RenderOptions(env="generic"))


@pytest.fixture(scope="module")
def toy(tmp_path_factory) -> tuple[Path, Path]:
    """Best-of-8 rollouts of the synthetic tree (12 tasks) and the dataset built from them."""
    root = tmp_path_factory.mktemp("held-out")
    r = runner.invoke(app, ["run", "--env", "synthetic", "-m", "bon@8", "--steps", "3",
                            "--max-tasks", "12", "--split", "train", "--quiet",
                            "--out", str(root / "runs")])
    assert r.exit_code == 0, r.output
    traj = root / "runs" / "bon@8__seed0.jsonl"
    build_dataset(read_trajectories([traj]), root / "ds", OPTIONS)
    return traj, root / "ds"


def _states(scores_by_group: dict[tuple[str, int], list[tuple[float, bool]]]):
    h = History("x", "o0")
    keys = [(g, s, y) for g, rows in scores_by_group.items() for s, y in rows]
    states = HeldOutStates(tuple(h for _ in keys), tuple(g[0] for g, _, _ in keys),
                           tuple(g[1] for g, _, _ in keys), np.zeros(len(keys)),
                           np.zeros(len(keys)), np.array([y for _, _, y in keys]))
    return states, [s for _, s, _ in keys]


def test_the_report_counts_pairs_within_a_task_and_step_only():
    states, scores = _states({("a", 1): [(0.9, True), (0.2, False)],    # ranked right
                              ("a", 2): [(0.1, True), (0.6, False), (0.6, False)],  # wrong
                              ("b", 1): [(0.5, True), (0.5, False)],    # a tie: one half
                              ("c", 1): [(0.99, True), (0.0, True)]})   # one outcome: no pair
    rep = held_out_report(states, scores)
    assert rep["auc_within_by_step"] == {"1": pytest.approx(1.5 / 2), "2": 0.0}
    assert rep["auc_within"] == pytest.approx(1.5 / 4)
    assert rep["constant_share"] == pytest.approx(1 / 4) and rep["states"] == 9
    assert constant_share([1.0, 2.0], [("a", 1), ("b", 1)]) is None  # no group of two


def test_the_states_are_the_datasets_rows_rebuilt_from_the_trajectories(toy):
    traj, ds = toy
    rows, threshold = dataset_split_rows(ds, "test")
    states = held_out_states(rows, read_trajectories([traj]), threshold)
    assert threshold == 0.8 and len(states.histories) == len(rows) > 0
    for r, h in zip(rows, states.histories, strict=True):
        assert (h.task_id, len(h.steps)) == (r["task_id"], r["step"])
        assert sum(s.reward for s in h.steps) == pytest.approx(r["reward_so_far"])
    other = [h for h in read_trajectories([traj])][::-1]  # the same files in another order
    with pytest.raises(ValueError, match="not in the trajectories given"):
        held_out_states(rows, other[: len(other) // 3], threshold)


def test_the_cli_reports_an_informative_value_and_a_constant_one(toy, tmp_path):
    traj, ds = toy
    args = ["value-auc", str(traj), "-d", str(ds), "--env", "synthetic", "--prior", "synthetic"]
    r = runner.invoke(app, [*args, "--value", "exact", "-o", str(tmp_path / "exact.json")])
    assert r.exit_code == 0, r.output
    exact = json.loads((tmp_path / "exact.json").read_text())
    assert "auc within (task, step)" in r.output and exact["auc_within"] > 0.6
    assert exact["constant_share"] < 1.0 and exact["auc_within_by_step"]  # step 0: one state
    r = runner.invoke(app, [*args, "--value", "none", "-o", str(tmp_path / "none.json")])
    none = json.loads((tmp_path / "none.json").read_text())
    assert none["constant_share"] == 1.0  # f = 0: ranks by the reward so far alone (as training's
    assert none["auc_within"] < exact["auc_within"]  # AUC of the implied return reward + f)
    assert none["states"] == exact["states"] and none["groups"] == exact["groups"]
    r = runner.invoke(app, [*args, "--value", "exact", "--split", "nope"])
    assert r.exit_code == 2 and "no split 'nope'" in r.output


async def test_the_yesno_value_through_a_prior_counts_its_calls(toy):
    traj, ds = toy
    rows, threshold = dataset_split_rows(ds, "test")
    states = held_out_states(rows, read_trajectories([traj]), threshold)
    with LoopbackServer() as srv:
        prior = OpenAIPrior(OpenAIOptions(base_url=srv.url, model="toy", cache=False,
                                          endpoint="completions"), env="synthetic")
        value = VALUES.build("zero-shot-yesno", {}, env_name="synthetic", env_options=None,
                             beta=1.0, prior=prior)
        scores, usage = await score_all(value, states.histories, batch_size=16)
        await prior.aclose()
    rep = held_out_report(states, scores, usage)
    assert rep["calls"] == srv.counts["logprobs"] == usage.calls > 0
    assert rep["constant_share"] < 1.0 and all(0 < s < 1 for s in scores)
    assert rep["auc_within"] is None or math.isfinite(rep["auc_within"])
