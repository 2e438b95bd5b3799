"""The evidence document: computed from rows, honest about selection, regenerated exactly."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from studies.sweeps.config import CellParams
from studies.sweeps.evidence import main as evidence_main
from studies.sweeps.evidence import render
from studies.sweeps.harvest import dumps_record, harvest
from studies.sweeps.report import best_regime, open_note

REPO = Path(__file__).resolve().parents[3]


def record(gain: float, split: str = "test", tasks: int = 30, seed: int = 0, **cell) -> dict:
    """A cell record whose AMC succeeds ``gain`` more often than Best-of-N (seeded rows)."""
    rng = np.random.default_rng(seed)
    # cells of the regime before issue 30 (closed-channel cells have their own section)
    c = CellParams(split=split, **{"menu_form": False, **cell}).model_dump(mode="json")
    rows = []
    for t in range(tasks):
        for s in range(2):
            b = float(rng.random() < 0.4)
            a = float(rng.random() < 0.4 + gain)
            rows.append({"task_id": str(t), "seed": s, "budget": 5,
                         "bon": {"metrics": {"oracle_best": b, "max_weight_reward": b,
                                             "weighted_mean_reward": b}, "calls": 20, "tokens": 0},
                         "amc": {"metrics": {"oracle_best": a, "max_weight_reward": a,
                                             "weighted_mean_reward": a}, "calls": 20,
                                 "tokens": 0}})
    return {"name": f"{split}-{cell}-{gain}", "cell": c, "summary": {}, "rows": rows}


def diff(rec: dict) -> float:
    return float(np.mean([r["amc"]["metrics"]["oracle_best"] - r["bon"]["metrics"]["oracle_best"]
                          for r in rec["rows"]]))


def test_tables_hold_the_paired_difference_of_the_rows():
    runs = [record(0.3, value="learned"), record(0.0, q=0.8, value="learned", seed=1)]
    text = render(runs, None, None, "evidence")
    assert f"{diff(runs[0]):+.3f} [" in text and f"{diff(runs[1]):+.3f} [" in text
    assert "| 0.8 | learned V_θ |" in text  # the q axis holds the q = 0.8 cell


def test_goal_verdict_and_best_regime_chosen_on_validation():
    good_test = record(0.35, value="learned", beta=0.5)
    poor_test = record(0.0, value="learned", beta=1.0, seed=3)
    # validation prefers beta = 1 (a made-up selection): the report must follow it, not test
    runs = [good_test, poor_test, record(0.0, "validation", value="learned", beta=0.5, seed=4),
            record(0.4, "validation", value="learned", beta=1.0, seed=5)]
    chosen, clean = best_regime(runs)
    assert clean and chosen is poor_test
    assert "**Goal not met**" in render(runs, None, None, "e")
    chosen, clean = best_regime([good_test, poor_test])
    assert chosen is good_test and not clean
    text = render([good_test, poor_test], None, None, "e")
    assert "**Goal met**" in text and "chosen on the test cells themselves" in text
    assert "an open-channel cell" in text  # menu_form False: the side channels were open
    assert open_note({"menu_form": True, "slack": 1}) == ""
    assert "budget = plan + 2" in open_note({"slack": 2})  # older records lack the key


def with_deployable(rec: dict, gain: float, seed: int) -> dict:
    """The record with a deployable selection whose AMC gain over Best-of-N is ``gain``."""
    rng = np.random.default_rng(seed)
    for r in rec["rows"]:
        r["bon"]["metrics"]["deployable_reward"] = float(rng.random() < 0.3)
        r["amc"]["metrics"]["deployable_reward"] = float(rng.random() < 0.3 + gain)
    return rec


def test_goal_is_judged_on_the_deployable_selection_too():
    strong_oracle = record(0.4, value="learned", beta=0.5, tasks=60, seed=11)
    text = render([with_deployable(strong_oracle, 0.0, 12)], None, None, "e")
    goal = text.split("## Goal", 1)[1].split("\n## ", 1)[0]
    assert "**Goal met** on the oracle" in goal and "goal **not met** on it" in goal
    assert "is **met**; on the deployable selection" in text
    assert ", not met; an open-channel" in text
    text = render([with_deployable(strong_oracle, 0.5, 13)], None, None, "e")
    assert "goal **met** on it" in text.split("## Goal", 1)[1]


def test_cells_of_an_earlier_value_are_kept_apart_from_the_current_values():
    old = {**record(0.4, value="learned", beta=0.5, seed=6), "value_model_hash": "aaa"}
    new = {**record(0.0, value="learned", beta=1.0, seed=7), "value_model_hash": "bbb"}
    ceiling = record(0.3, value="rollout", seed=8)
    quality = {"model_hash": "bbb", "final": {"test_pearson": 0.4, "test_auc": 0.8},
               "curve": [], "data": {"q_grid": [0.4], "rollouts": 1, "slack": 1},
               "held_out": "test"}
    text = render([old, new, ceiling], quality, None, "e",
                  {"aaa": {"final": {"test_pearson": 0.123, "test_auc": 0.7}}})
    goal = text.split("## Goal", 1)[1].split("\n## ", 1)[0]
    # the strong old cell would have met the goal: only the current value's cell counts
    assert "**Goal not met**" in goal and "β = 1," in goal and "β = 0.5" not in goal
    kept = text.split("## Superseded learned values", 1)[1]
    assert "| `aaa` | 0.123, 0.700 | test | q = 0.4, β = 0.5," in kept
    assert f"{diff(old):+.3f} [" in kept and "`bbb`" not in kept
    # without a recorded hash (older quality files) nothing is set apart
    assert "Superseded" not in render([old, new], {**quality, "model_hash": None}, None, "e")


def test_the_open_channel_sweep_keeps_its_own_value_when_the_stage_takes_another():
    """After the value stage moved to the protocol's winner, the finished open-channel sweep's
    cells still count as that sweep's (not superseded), and the quality section names the
    stage's current variant."""
    from studies.sweeps.evidence import OPEN_CHANNEL_VALUE

    cell = {**record(0.4, value="learned", beta=0.5, seed=6), "value_model_hash":
            OPEN_CHANNEL_VALUE}
    base = {"final": {"test_pearson": 0.4, "test_auc": 0.8}, "curve": [], "held_out": "test",
            "data": {"q_grid": [0.4], "rollouts": 1, "slack": 1}}
    winner = {**base, "model_hash": "w1", "params": {"loss": "bce", "calibration": "isotonic",
                                                      "state_rollouts": 4}}
    values = {OPEN_CHANNEL_VALUE: {**base, "model_hash": OPEN_CHANNEL_VALUE}}
    text = render([cell], winner, None, "e", values)
    assert "Superseded" not in text and "β = 0.5" in text.split("## Goal", 1)[1]
    assert ("current value (`sweeps/params.yaml`): Bernoulli head; isotonic calibration; "
            "4 more rollouts per state.") in text
    assert "Superseded" in render([cell], winner, None, "e", {})  # unpinned: set apart


def test_quality_section_shows_the_ceiling_and_within_task_auc_beside_the_curve():
    row = {"train_states": 100, "train_tasks": 9, "pearson": 0.3, "auc": 0.8,
           "auc_within": 0.61, "ece": 0.05, "brier": 0.1,
           "auc_within_by_step": {"2": 0.57, "10": 0.9}}
    quality = {"model_hash": "bbb", "held_out": "test",
               "final": {"test_pearson": 0.3, "test_auc": 0.8, "test_auc_within": 0.6},
               "curve": [row], "data": {"q_grid": [0.4], "rollouts": 1, "slack": 1},
               "ceiling": {"rollouts": 8, "pearson": 0.55, "auc": 0.9, "auc_within": 0.83,
                           "ece": 0.02, "brier": 0.07,
                           "auc_within_by_step": {"2": 0.69, "3": 0.8, "10": 0.95}}}
    text = render([record(0.0, value="learned", seed=9) | {"value_model_hash": "bbb"}],
                  quality, None, "e")
    assert "| 100 | 9 | 0.300 | 0.800 | 0.610 | 0.050 | 0.100 |" in text
    assert "| ceiling: Monte-Carlo rollout value (M = 8) | – | 0.550 | 0.900 | 0.830 |" in text
    assert "AUC within (task, step) 0.600 (the rollout value on the same states: 0.830)" in text
    assert "| 2 | 0.570 | 0.690 |\n| 10 | 0.900 | 0.950 |" in text  # common steps, in order


def test_harvest_keeps_every_experiment(tmp_path: Path):
    repo = tmp_path / "repo"
    (repo / "sweeps/out").mkdir(parents=True)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git[:3], "init", "-q"], check=True)
    for i, gain in enumerate((0.1, 0.2, 0.2)):  # the third repeats the second's rows
        rec = record(gain, value="rollout", seed=i if i < 2 else 1)
        rec["name"] = "same-name"
        (repo / "sweeps/out/runs.json").write_text(json.dumps(rec))
        # each experiment trained its own value (issue 30's variants): its quality is kept
        (repo / "sweeps/out/value_quality.json").write_text(json.dumps({"model_hash": f"v{i}"}))
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "commit", "-qm", f"exp {i}", "--allow-empty"], check=True)
        subprocess.run([*git, "update-ref", f"refs/exps/aa/bb/exp{i}", "HEAD"], check=True)
    subprocess.run([*git, "rm", "-q", "sweeps/out/value_quality.json"], check=True)
    subprocess.run([*git, "commit", "-qm", "workspace without a value"], check=True)
    written = harvest(repo, tmp_path / "ev")
    names = sorted(p.name for p in written if p.parent.name == "runs")
    assert names == ["same-name--exp1.json", "same-name.json"]  # different rows: both kept
    assert sorted(p.name for p in (tmp_path / "ev/values").iterdir()) == [
        "v0.json", "v1.json", "v2.json"]  # every experiment's own value, not the workspace's
    back = json.loads((tmp_path / "ev/runs/same-name.json").read_text())
    assert back["rows"] == record(0.1, value="rollout", seed=0)["rows"]
    assert json.loads(dumps_record(back)) == back
    # the value's quality is kept under its content hash too (earlier values' cells need it)
    (repo / "sweeps/out/value_quality.json").write_text(json.dumps({"model_hash": "abc"}))
    harvest(repo, tmp_path / "ev")
    assert json.loads((tmp_path / "ev/values/abc.json").read_text()) == {"model_hash": "abc"}


def test_committed_results_regenerate_the_evidence_document_exactly():
    if not (REPO / "evidence/runs").is_dir():
        pytest.skip("no committed sweep results in this checkout")
    assert evidence_main(["--runs", str(REPO / "evidence"), "--doc",
                          str(REPO / "docs/evidence.md"), "--check"]) == 0


def test_a_sharpened_value_is_chosen_on_validation_and_keeps_its_ceiling_twin():
    plain = record(0.05, value="learned", beta=0.05, seed=6)
    sharp = record(0.3, value="learned", beta=0.05, sharpen=3.0, seed=7)
    ceiling = record(0.4, value="rollout", beta=0.05, seed=8)
    val = [record(0.0, "validation", value="learned", beta=0.05, seed=9),
           record(0.2, "validation", value="learned", beta=0.05, sharpen=3.0, seed=10)]
    old = {k: v for k, v in plain["cell"].items() if k != "sharpen"}  # a record from before
    runs = [{**plain, "cell": old}, sharp, ceiling, *val]
    chosen, clean = best_regime(runs)
    assert clean and chosen is sharp
    text = render(runs, None, None, "e")
    assert "value = learned V_θ with p^3" in text
    # the ceiling beside the goal is the rollout cell at the same setting
    assert f"upper-bound value at the same setting gives {diff(ceiling):+.3f}" in text
    # every learned cell is listed, both splits, the sharpened ones too
    section = text.split("## Every learned-value cell")[1].split("\n## ")[0]
    assert section.count("| validation |") == 2 and section.count("| test |") == 2
    # the factor tables hold cells at the base point only (no sharpened cell on the beta axis)
    beta_axis = text.split("## Gain vs beta")[1].split("\n## ")[0]
    assert "p^3" not in beta_axis and f"{diff(sharp):+.3f} [" not in beta_axis
    # the exponent's own table: every k of both splits, in order, with its paired difference
    k_table = text.split("## Gain vs the learned value's exponent k")[1].split("\n## ")[0]
    rows = [line for line in k_table.splitlines() if line.startswith("| 4 | 0.05 |")]
    assert [r.split(" | ")[2:4] for r in rows] == [["validation", "1"], ["validation", "3"],
                                                    ["test", "1"], ["test", "3"]]
    assert f"| {diff(sharp):+.3f} [" in rows[3]


def test_the_exponent_section_draws_its_plot(tmp_path):
    runs = [record(0.0, value="learned", beta=0.05, seed=1),
            record(0.2, value="learned", beta=0.05, sharpen=4.0, seed=2)]
    text = render(runs, None, tmp_path, "e")
    assert "![gain vs k](e/gain_vs_sharpen.png)" in text
    assert (tmp_path / "gain_vs_sharpen.png").stat().st_size > 1000
    # a single exponent is no axis: no section
    assert "exponent k" not in render(runs[:1], None, None, "e")


def test_the_deployable_shortfall_is_explained_by_its_measured_selection_loss():
    rec = record(0.4, value="learned", beta=0.5, tasks=60, seed=21)
    for i, r in enumerate(rec["rows"]):  # the selection misses AMC successes of every 2nd row only
        for k in ("bon", "amc"):
            m = r[k]["metrics"]
            m["deployable_reward"] = 0.0 if k == "amc" and i % 2 == 0 else m["oracle_best"]
    amc = [r["amc"]["metrics"] for r in rec["rows"]]
    lost = sum(m["oracle_best"] - m["deployable_reward"] for m in amc) / len(amc)
    missed = sum(m["deployable_reward"] < m["oracle_best"] for m in amc) / sum(
        m["oracle_best"] > 0 for m in amc)
    goal = render([rec], None, None, "e").split("## Goal", 1)[1].split("\n## ", 1)[0]
    assert "goal **not met** on it" in goal
    why = goal.split("Why the deployable selection gains less:", 1)[1]
    assert f"gives up {lost:.3f} of AMC's oracle success and 0.000 of Best-of-N's" in why
    assert f"(AMC − Best-of-N {lost:+.3f} [" in why
    assert f"misses {missed:.0%} of AMC's and 0% of Best-of-N's" in why
    # a deployable selection that meets the goal needs no explanation
    met = render([with_deployable(record(0.4, value="learned", beta=0.5, tasks=60, seed=21),
                                  0.5, 13)], None, None, "e")
    assert "Why the deployable" not in met


def test_a_calibrated_value_is_a_value_of_its_own(tmp_path: Path):
    """Same weights, with and without a fitted calibration: two values, not one hash."""
    from studies.sweeps.harvest import value_id

    repo = tmp_path / "repo"
    (repo / "sweeps/out").mkdir(parents=True)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git[:3], "init", "-q"], check=True)
    cals = ({"method": "none", "params": {}}, {"method": "platt", "params": {"a": 2.0, "b": -1.0}})
    for i, cal in enumerate(cals):
        rec = {**record(0.1, value="learned", seed=i), "name": f"cell{i}", "value_model_hash": "m"}
        (repo / "sweeps/out/runs.json").write_text(json.dumps(rec))
        (repo / "sweeps/out/value_quality.json").write_text(
            json.dumps({"model_hash": "m", "calibration": cal}))
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "commit", "-qm", f"exp {i}"], check=True)
        subprocess.run([*git, "update-ref", f"refs/exps/aa/bb/exp{i}", "HEAD"], check=True)
    harvest(repo, tmp_path / "ev")
    ids = [json.loads((tmp_path / f"ev/runs/cell{i}.json").read_text())["value_model_hash"]
           for i in range(2)]
    assert ids[0] == "m" and ids[1] == value_id({"model_hash": "m", "calibration": cals[1]})
    assert ids[1].startswith("m-platt-")
    for i, v in enumerate(ids):
        assert json.loads((tmp_path / f"ev/values/{v}.json").read_text())["calibration"] == cals[i]


def test_a_value_s_first_quality_record_is_kept(tmp_path: Path):
    """A later copy of the same value (same id, other wall times) does not rewrite the kept
    record (it had churned evidence/values/ on every harvest)."""
    from studies.sweeps.harvest import save_quality

    first = json.dumps({"model_hash": "m", "final": {"head_seconds": 2.4}})
    assert save_quality(first, tmp_path) == [tmp_path / "values/m.json"]
    assert save_quality(json.dumps({"model_hash": "m", "final": {"head_seconds": 3.5}}),
                        tmp_path) == []
    assert (tmp_path / "values/m.json").read_text() == first


def test_the_re_chosen_value_s_result_closes_the_document_as_a_section(tmp_path: Path):
    from studies.sweeps.evidence import SIM_OPTIONS, with_sim_options

    assert with_sim_options("doc\n", tmp_path) == "doc\n"  # not reported yet: no section
    (tmp_path / SIM_OPTIONS).parent.mkdir(parents=True)
    (tmp_path / SIM_OPTIONS).write_text("# Re-chosen\n\n| a |\n")
    assert with_sim_options("doc\n", tmp_path) == "doc\n\n## Re-chosen\n\n| a |\n"
