"""The sweep cell at toy size: paired stats, schedules, budgets, pairing and determinism."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from studies.sweeps.cell import run_cell, smc_config, summarise
from studies.sweeps.config import CellParams
from studies.sweeps.stats import paired, se_over_tasks
from studies.sweeps.tasks import make_suite, split_tasks, task_budget, value_train_tasks

ROOT = Path(__file__).resolve().parents[3]


def test_paired_averages_seeds_within_a_task_before_the_standard_error():
    tasks = ["a", "a", "b", "b", "c", "c"]
    bon = [0, 0, 1, 0, 0, 1]
    amc = [1, 1, 1, 1, 0, 1]  # d = 1, 1 | 0, 1 | 0, 0 -> task means 1, 0.5, 0
    p = paired(tasks, bon, amc)
    assert (p.a, p.b, p.d.mean, p.d.pairs, p.d.tasks) == (
        pytest.approx(1 / 3), pytest.approx(5 / 6), pytest.approx(0.5), 6, 3)
    assert p.d.se == pytest.approx(np.std([1, 0.5, 0], ddof=1) / np.sqrt(3))  # not over 6 pairs
    assert p.d.lo == pytest.approx(0.5 - 4.303 * p.d.se, abs=1e-3)  # t, 2 degrees of freedom
    assert p.d.hi == pytest.approx(0.5 + 4.303 * p.d.se, abs=1e-3)
    assert not p.d.separates
    # four tasks all in favour: the t interval excludes 0 but the exact sign-flip p is 2/16
    assert not paired(["a", "b", "c", "d"], [0, 0, 0, 0], [0.5, 0.6, 0.7, 0.6]).d.separates
    six = paired(list("abcdef"), [0] * 6, [0.5, 0.6, 0.7, 0.6, 0.5, 0.7]).d
    assert six.p == pytest.approx(2 / 64) and six.separates
    assert np.isnan(se_over_tasks(["a", "a"], [1.0, 0.0]))  # one task: no spread to measure


def test_paired_refuses_unequal_lengths():
    with pytest.raises(ValueError, match="equal lengths"):
        paired(["a", "b"], [0, 1], [1])


def test_schedules_and_budgets_per_task():
    suite = make_suite(CellParams())
    task = suite.task_ids("test")[0]
    b = task_budget(suite, task, 2)
    assert b == task_budget(suite, task, 0) + 2 >= 3
    every = smc_config(CellParams(every=2), 9)
    assert (every.resample, every.resample_steps) == ("fixed", (2, 4, 6, 8))
    ess = smc_config(CellParams(schedule="ess", rho=0.3), 9)
    assert (ess.resample, ess.ess_threshold) == ("ess", 0.3)
    fixed = smc_config(CellParams(schedule="fixed", steps=(1, 3), n=8, beta=0.5), 6)
    assert (fixed.resample_steps, fixed.n_particles, fixed.beta) == ((1, 3), 8, 0.5)


def test_validation_tail_is_disjoint_from_value_training_and_test():
    cell = CellParams(split="validation", val_tasks=20)
    suite = make_suite(cell)
    val, train = split_tasks(suite, cell), value_train_tasks(suite, cell)
    assert len(val) == 20 and not set(val) & set(train)
    assert not set(val) & set(split_tasks(suite, CellParams()))
    assert len(split_tasks(suite, CellParams(max_tasks=5))) == 5


def toy(**kw) -> CellParams:
    return CellParams(max_tasks=4, seeds=(0, 1), rollouts=4, **kw)


def test_cell_rows_are_paired_deterministic_and_best_of_n_ignores_the_value():
    rollout = asyncio.run(run_cell(toy()))
    again = asyncio.run(run_cell(toy()))
    none = asyncio.run(run_cell(toy(value="none")))
    assert rollout == again  # seeded: the same rows
    keys = [(r["task_id"], r["seed"]) for r in rollout]
    assert len(set(keys)) == len(keys) == 8
    # Best-of-N sees the same (task, seed) whatever AMC's value: the comparison is paired
    assert [r["bon"] for r in rollout] == [r["bon"] for r in none]
    assert [r["amc"] for r in rollout] != [r["amc"] for r in none]
    # the rollout value's calls are billed to AMC; Best-of-N makes one call per step
    assert all(r["amc"]["calls"] > r["bon"]["calls"] for r in rollout)
    s = summarise(rollout)
    assert s["pairs"] == 8 and s["oracle_best.diff"] == pytest.approx(
        s["oracle_best.amc"] - s["oracle_best.bon"])


def test_sharpening_raises_the_success_probability_to_a_power_before_the_soft_value():
    from studies.sweeps.cell import SoftBinaryValue, cell_name

    class Fixed:
        async def score(self, histories):
            return [0.09, 0.3, 1.0, 0.0]

    beta = 0.05
    plain = asyncio.run(SoftBinaryValue(Fixed(), beta).score([None] * 4))
    sharp = asyncio.run(SoftBinaryValue(Fixed(), beta, sharpen=3.0).score([None] * 4))
    soft = [beta * np.log(1 - p + p * np.exp(1 / beta)) for p in (0.09**3, 0.3**3, 1.0, 0.0)]
    assert sharp == pytest.approx(soft, abs=1e-4)  # the code guards log(0) with 1e-12
    # weights exp(f / beta): the doomed-looking state loses ~ (0.09 / 0.3)^3 of the live one's
    assert np.exp((sharp[0] - sharp[1]) / beta) == pytest.approx((0.09 / 0.3) ** 3, rel=0.01)
    assert np.exp((plain[0] - plain[1]) / beta) == pytest.approx(0.09 / 0.3, rel=0.01)
    assert cell_name(toy(value="learned", sharpen=3.0)) != cell_name(toy(value="learned"))
    assert "-x" not in cell_name(toy(value="learned"))


def test_a_fitted_calibration_maps_p_before_the_soft_value(tmp_path):
    import json

    from amc.value.calibration import fit
    from studies.sweeps.cell import CALIBRATION_FILE, SoftBinaryValue, load_calibration

    class Fixed:
        async def score(self, histories):
            return [0.1, 0.5, 0.9]

    assert load_calibration(tmp_path) is None  # the stage fitted none: p as trained
    cal = fit("isotonic", [0.1, 0.1, 0.5, 0.5, 0.9, 0.9], [0, 0, 0, 1, 1, 1])
    (tmp_path / CALIBRATION_FILE).write_text(json.dumps(cal.to_dict()))
    loaded = load_calibration(tmp_path)
    beta = 0.05
    got = asyncio.run(SoftBinaryValue(Fixed(), beta, calibration=loaded).score([None] * 3))
    soft = [beta * np.log(1 - p + p * np.exp(1 / beta)) for p in (0.0, 0.5, 1.0)]
    assert got == pytest.approx(soft, abs=1e-4)  # the doomed state's 0.1 became 0


def test_the_value_stage_trains_the_configured_likelihood():
    from pathlib import Path

    from studies.sweeps.config import ValueParams
    from studies.sweeps.value import train_config

    assert train_config(ValueParams(loss="bce"), Path("c"), False).model.loss == "bce"
    assert train_config(ValueParams(), Path("c"), False).model.loss == "mse"


def test_the_value_stage_passes_issue_50_s_options_to_training_and_rendering():
    from pathlib import Path

    from amc.value.ranking import ObjectiveConfig
    from studies.sweeps.config import ValueParams
    from studies.sweeps.value import dataset_options, train_config

    vp = ValueParams(objective=ObjectiveConfig(kind="listwise"), fit_temperature=True,
                     show_summary=True)
    head = train_config(vp, Path("c"), False).head
    assert head.objective.kind == "listwise" and head.temperature.fit
    assert dataset_options(vp).render.show_summary
    plain = ValueParams()
    assert train_config(plain, Path("c"), False).head.objective.kind == "regression"
    assert not train_config(plain, Path("c"), False).head.temperature.fit
    assert not dataset_options(plain).render.show_summary  # every kept value's rendering


def test_a_fitted_value_map_is_named_and_needs_a_stored_temperature(tmp_path):
    import json

    from amc.value.model import CONFIG_FILE
    from studies.sweeps.cell import ValueFactory, cell_name
    from studies.sweeps.config import CellParams

    cell = CellParams(value="learned", value_map="fitted", beta=0.05,
                      value_model=str(tmp_path))
    assert cell_name(cell).endswith("-fitT-menu")  # its records never collide with soft cells
    assert "fitT" not in cell_name(cell.model_copy(update={"value_map": "soft"}))
    from amc.value.registry import resolve_model_dir
    from studies.sweeps.keep_value import restore

    restore(ROOT / "sweeps/kept/value", tmp_path / "v")  # issue 30's value: no fitted T
    cell = cell.model_copy(update={"value_model": str(tmp_path / "v")})
    cfg = resolve_model_dir(str(tmp_path / "v")) / CONFIG_FILE
    with pytest.raises(ValueError, match="stores no resampling temperature"):
        ValueFactory(cell, None, None)
    meta = json.loads(cfg.read_text())
    meta.setdefault("metrics", {})["resample_temperature"] = 0.2
    cfg.write_text(json.dumps(meta))
    values = ValueFactory(cell, None, None)
    assert values(5).scale == pytest.approx(0.05 / 0.2)
    assert values(5).inner is values.selection  # one model, one score cache


def test_a_scaled_value_multiplies_its_inner_scores():
    from studies.sweeps.cell import ScaledValue

    class Fixed:
        async def score(self, histories):
            return [0.1, 0.5, 0.9]

    assert asyncio.run(ScaledValue(Fixed(), 0.25).score([None] * 3)) == pytest.approx(
        [0.025, 0.125, 0.225])
