"""The drift monitor on the cheap skill-controlled prior (TextCraft + planner-mix).

A real (tiny) learned value: the mean realised future reward at each step index, fitted on
rollouts that the collect stage gathered from the prior at skill q = 0.8, registered and
promoted through the real gate (which records its baseline). The monitor then checks the
champion on fresh rollouts: with the same prior it sees no drift; after the prior changes to
q = 0.2 its calibration error grows: drift (its bias rises toward 0, which alone is no drift).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

import mlflow
import numpy as np
import pytest
import yaml

from amc.config import Frozen
from amc.monitor import drift
from amc.pipeline import collect, evaluate, promote
from amc.pipeline.params import load_params
from amc.registry import VALUES
from amc.types import History
from amc.value.data import read_trajectories, returns_to_go

MODEL = "amc-value-textcraft"
pytestmark = pytest.mark.slow


def fit_step_means(histories: Sequence[History], horizon: int) -> list[float]:
    """Mean realised future reward at each step index t = 0..horizon (least squares)."""
    sums, counts = np.zeros(horizon + 1), np.zeros(horizon + 1)
    for h in histories:
        y = returns_to_go([s.reward for s in h.steps])
        for t, v in enumerate(y[:horizon + 1]):
            sums[t] += v
            counts[t] += 1
    return [float(s / c) if c else 0.0 for s, c in zip(sums, counts, strict=True)]


class StepMeanOptions(Frozen):
    """Options of the step-mean value."""

    model: str
    """models:/ URI of a version holding step_means.json."""


class StepMeanValue:
    def __init__(self, means: list[float]) -> None:
        self.means = means

    async def score(self, histories: Sequence[History]) -> list[float]:
        return [self.means[min(len(h.steps), len(self.means) - 1)] for h in histories]

    async def aclose(self) -> None:
        pass


@VALUES.register("registry-stepmean", options=StepMeanOptions)
def make_step_mean_value(options: StepMeanOptions, **_: object) -> StepMeanValue:
    """Test value: per-step mean future reward read from a registered model version."""
    local = Path(mlflow.artifacts.download_artifacts(artifact_uri=options.model))
    return StepMeanValue(json.loads((local / "step_means.json").read_text()))


def set_q(q: float) -> None:
    data = yaml.safe_load(Path("params.yaml").read_text())
    data["prior"]["options"]["q"] = q
    Path("params.yaml").write_text(yaml.safe_dump(data))


@pytest.fixture
def textcraft(workdir: Path) -> Path:
    data = yaml.safe_load(Path("params.yaml").read_text())
    data["env"] = {"name": "textcraft", "options": {"reward": "dense", "max_depth": 2}}
    data["prior"] = {"name": "planner-mix", "options": {"q": 0.8}}
    data["smc"] = {"max_steps": 6, "beta": 1.0, "resample": "fixed", "resample_steps": [2],
                   "success_threshold": 1.0}
    data["collect"].update(max_tasks=8, rollouts=4)
    # the baseline's states: bon@2 + bon@4 over 3 seeds = 18 prior rollouts per task
    data["evaluate"].update(max_tasks=8, n_grid=[2, 4], seeds=[0, 1, 2],
                            learned_value="registry-stepmean")
    data["promote"].update(calibration_states=400)
    # 8 tasks: a loose level so the q 0.8 -> 0.2 change clears the noise of so few tasks
    # (the level's size and power: tests/pipeline/test_gate_stats.py)
    data["drift"] = {"rollouts": 8, "seeds_per_check": 2, "calibration_states": 400,
                     "max_success_drop": 0.2, "max_calibration_increase": 0.05, "level": 0.5}
    Path("params.yaml").write_text(yaml.safe_dump(data))
    return workdir


def train_and_promote(root: Path) -> str:
    p = load_params("params.yaml")
    collect.collect(p, progress=False)
    means = fit_step_means(read_trajectories(sorted(p.collect.out_dir.glob("*.jsonl"))),
                           p.smc.max_steps)
    src = root / "models" / "stepmean"
    src.mkdir(parents=True)
    (src / "step_means.json").write_text(json.dumps(means))
    client = mlflow.MlflowClient()
    client.create_registered_model(MODEL)
    v = str(client.create_model_version(MODEL, source=str(src)).version)
    client.set_registered_model_alias(MODEL, "challenger", v)
    evaluate.run(p)
    d = promote.run(p)
    assert d["promote"] and d["champion_after"] == v
    return v


def test_monitor_flags_drift_when_the_prior_changes(textcraft: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    p = load_params("params.yaml")
    assert drift.monitor(p)["drift"] is None  # no champion yet: nothing to monitor
    v = train_and_promote(textcraft)
    tags = mlflow.MlflowClient().get_model_version(MODEL, v).tags
    assert float(tags["baseline.calibration_mae"]) >= 0 and "baseline.success" in tags

    capsys.readouterr()
    same = drift.monitor(load_params("params.yaml"))
    assert same["drift"] is False, same["reasons"]
    out = capsys.readouterr()  # what it runs, then progress lines (done/total, ETA)
    assert re.search(r"^drift check 0: \d+ tasks x 2 seeds, ", out.out, re.M), out.out
    assert re.search(r"\d+/\d+ tasks, .*ETA", out.err), out.err[-2000:]
    assert same["check"] == 0 and same["seeds"] == [100000, 100001]  # fresh, not eval's
    assert same["baseline"]["calibration_mae"] == pytest.approx(
        float(tags["baseline.calibration_mae"]))
    assert same["now"]["calibration_states"] > 0 and same["now"]["champion_runs"] == 16

    set_q(0.2)  # the provider swapped a much weaker model in behind the API
    moved = drift.monitor(load_params("params.yaml"))
    assert moved["drift"] is True and moved["reasons"], moved["now"]
    # what got worse flags (its error grew); its bias moved toward 0, which alone never would
    assert moved["calibration_increase"] > 0.05 and "calibration error" in moved["reasons"][0]
    assert "s.e.)" in moved["reasons"][0]  # weighed against both sides' standard errors
    assert moved["baseline"]["calibration_mae_se"] == pytest.approx(
        float(tags["baseline.calibration_mae_se"])) and moved["now"]["calibration_mae_se"] > 0
    assert not any("bias" in r for r in moved["reasons"]) and moved["bias_growth"] < 0
    assert moved["check"] == 1 and moved["seeds"] == [100002, 100003]
    assert moved["prior"]["options"] == {"q": 0.2}  # attributed to the prior's identity
    assert moved["bias_shift"] > same["bias_shift"]  # it over-predicts the weaker prior
    tags = mlflow.MlflowClient().get_model_version(MODEL, v).tags
    assert tags["drift.status"] == "drift" and tags["drift.check"] == "1"
    assert [r["drift"] for r in drift.history(load_params("params.yaml"))] == [False, True]
    assert json.loads(Path("data/drift/latest.json").read_text())["check"] == 1
    assert "DRIFT" in drift.markdown(moved)
    md = drift.markdown(moved)  # numbers for people, the round named (rounds are off here)
    assert "rounds off" in md and "round None" not in md
    assert not re.search(r"\.\d{6,}", md), md  # 0.3333333333333333 was printed before
    row = next(ln for ln in md.splitlines() if ln.startswith("| calibration_mae |"))
    assert row == (f"| calibration_mae | {moved['baseline']['calibration_mae']:.4g} | "
                   f"{moved['now']['calibration_mae']:.4g} |")
    line = drift.line(moved)
    assert line.startswith("drift check 1: DRIFT: gain ") and moved["reasons"][0] in line
    assert "calibration_mae " in line and "(promotion " in line
