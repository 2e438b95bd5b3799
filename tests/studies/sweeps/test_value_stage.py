"""The sweep's value stage at toy size: data, curve, model, hash and the rollout ceiling."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from amc.value.data import load_dataset_dir
from studies.sweeps.cell import dir_hash
from studies.sweeps.config import CellParams, ValueParams
from studies.sweeps.value import run


@pytest.mark.slow
def test_value_stage_records_quality_hash_and_the_ceiling_on_the_same_states(tmp_path: Path):
    vp = ValueParams(q_grid=(0.3, 0.7), rollouts=2, max_tasks=24, sizes=(40,), epochs=2,
                     max_length=64, work_dir=str(tmp_path / "work"), out_dir=str(tmp_path / "m"),
                     quality_file=str(tmp_path / "q.json"), loss="bce", calibration="isotonic")
    cell = CellParams(rollouts=4)
    rec = run(vp, cell, track=False)
    saved = json.loads((tmp_path / "q.json").read_text())
    assert saved["model_hash"] == rec["model_hash"] and saved["ceiling"].keys() == rec[
        "ceiling"].keys()
    assert rec["model_hash"] == dir_hash(tmp_path / "m")  # what a learned cell records
    dsd, render, card = load_dataset_dir(tmp_path / "work/dataset")
    assert not render.show_budget and card["splits"]["train"]["trajectories"] > 0
    held = dsd[rec["held_out"]]
    up = rec["ceiling"]
    # the ceiling is measured on exactly the held-out states the learned value was
    assert up["states"] == len(held) and up["rollouts"] == 4
    assert all(np.isfinite(up[k]) for k in ("pearson", "auc", "mse"))
    assert 0.0 <= up["auc"] <= 1.0 and rec["curve"][0]["train_states"] == 40
    assert "[STEPS LEFT]" not in held[0]["text"]  # no plan-length budget shown (issue 30)
    assert rec["data"]["menu_form"] and not rec["data"]["show_budget"]
    # the Bernoulli head's p, calibrated on the validation states and saved beside the model
    from studies.sweeps.cell import load_calibration

    cal = load_calibration(tmp_path / "m")
    assert cal is not None and rec["calibration"]["method"] == "isotonic"
    assert np.all(np.diff(cal(np.linspace(0, 1, 101))) >= 0)
    # offline figures of the learned value and of the ceiling on the same held-out states
    off = rec["offline"]
    assert off["learned"]["states"] == off["ceiling"]["states"] > 0
    assert off["ceiling"]["doomed_states"] > 0 and off["ceiling"]["doomed_mean"] <= 0.05
    assert 0 <= off["learned"]["doomed_mean"] <= 1
    assert set(up["auc_within_by_step"]) <= {str(t) for t in set(held["step"])}


@pytest.mark.slow
def test_value_stage_with_averaged_td_targets_and_smc_states(tmp_path: Path):
    vp = ValueParams(q_grid=(0.4,), rollouts=2, max_tasks=16, sizes=(30,), epochs=2,
                     max_length=64, work_dir=str(tmp_path / "work"), out_dir=str(tmp_path / "m"),
                     quality_file=str(tmp_path / "q.json"), state_rollouts=2, targets="td",
                     td_lambda=0.5, smc_states=True, smc_n=2, ceiling=False)
    clock: dict[str, dict[str, float]] = {}
    rec = run(vp, CellParams(rollouts=2), track=False, clock=clock)
    # every phase timed once (benchmarks/bench_value_stage.py reads them), smc_states included;
    # no rollout ceiling (SciWorld's setting): neither its phase nor its figures
    assert set(clock) == {"rollouts", "smc_states", "dataset", "targets", "curve", "final",
                          "calibration", "offline"}
    assert rec["ceiling"] is None and set(rec["offline"]) == {"doomed_succeeded", "learned"}
    assert all(v["wall_s"] >= 0 and v["cpu_s"] >= 0 for v in clock.values())
    assert clock["curve"]["cpu_s"] > 0  # the head trains inside it
    t = rec["targets"]
    assert t["smc_trajectories"] > 0 and t["retargeted_rows"] > 0 and t["td_rows"] > 0
    dsd, _, card = load_dataset_dir(tmp_path / "work/dataset")
    train = dsd["train"]["target"]
    assert card["targets_replaced"] == t["td_rows"]
    assert any(0 < y < 1 for y in train)  # averaged / bootstrapped, not only 0/1 draws
    held = dsd["test"]
    assert set(held["target"]) <= {0.0, 1.0}  # held-out rows keep their realised targets
    assert (tmp_path / "work" / "first-head").is_dir()


@pytest.mark.slow
def test_a_listwise_value_with_the_summary_and_a_fitted_temperature_steers_a_cell(
        tmp_path: Path):
    """Issue 50's options through the sweep's stage and cell: the model stores T, renders the
    summary, and a ``value_map: fitted`` cell weights by beta v / T."""
    import asyncio

    from amc.value.ranking import ObjectiveConfig
    from amc.value.registry import resolve_model_dir
    from amc.value.temperature import stored_temperature
    from studies.sweeps.bench import make_bench_suite
    from studies.sweeps.cell import ValueFactory, run_cell

    vp = ValueParams(q_grid=(0.4,), rollouts=4, max_tasks=12, sizes=(40,), epochs=2,
                     max_length=96, work_dir=str(tmp_path / "work"), out_dir=str(tmp_path / "m"),
                     quality_file=str(tmp_path / "q.json"), loss="bce", ceiling=False,
                     objective=ObjectiveConfig(kind="listwise", select_on="auc_within"),
                     fit_temperature=True, show_summary=True)
    rec = run(vp, CellParams(), track=False)
    t = stored_temperature(resolve_model_dir(str(tmp_path / "m")))
    assert t is not None and t == rec["final"]["resample_temperature"] > 0
    dsd, render, _ = load_dataset_dir(tmp_path / "work/dataset")
    assert render.show_summary
    assert any("[SUMMARY]" in x for x in dsd["train"]["text"])
    cell = CellParams(value="learned", value_map="fitted", beta=0.05, split="validation",
                      value_model=str(tmp_path / "m"), max_tasks=1, seeds=(0,), n=2)
    value = ValueFactory(cell, make_bench_suite(cell), None)(5)
    assert value.scale == pytest.approx(0.05 / t)  # V = beta v / T
    rows = asyncio.run(run_cell(cell))
    assert len(rows) == 1 and rows[0]["amc"]["calls"] > 0
