"""Cells run after closing the side channels get their own section and leave the rest alone."""

from __future__ import annotations

import copy
from pathlib import Path

from studies.sweeps.evidence import load_quality, load_runs, load_values, render
from studies.sweeps.report_closed import closed_section, split_closed

ROOT = Path(__file__).resolve().parents[3] / "evidence"


def closed_twin(rec: dict, value_hash: str | None = None) -> dict:
    twin = copy.deepcopy(rec)
    twin["cell"]["menu_form"] = True
    twin["name"] = rec["name"] + "-menu"
    if value_hash:
        twin["value_model_hash"] = value_hash
    return twin


def test_closed_cells_are_listed_apart_and_the_rest_of_the_document_is_unchanged():
    runs, quality, values = load_runs(ROOT), load_quality(ROOT), load_values(ROOT)
    runs = split_closed(runs)[0]  # the committed cells before issue 30
    learned = next(r for r in runs if r["cell"]["value"] == "learned")
    rollout = next(r for r in runs if r["cell"]["value"] == "rollout")
    vals = {**values, "h30": {"offline": {"learned": {"auc_within": 0.7, "log_loss": 0.4,
                                                      "doomed_mean": 0.05,
                                                      "doomed_weight": 0.2}}}}
    extra = [closed_twin(learned, "h30"), closed_twin(rollout)]
    before, after = split_closed(runs + extra)
    assert before == runs and after == extra
    text = render(runs + extra, quality, None, "evidence", vals)
    section = closed_section(extra, vals)
    assert section in text and text.replace(section + "\n", "") == render(
        runs, quality, None, "evidence", values)
    assert "0.700, 0.400, 0.050, 0.200" in section  # the learned twin's offline figures
    assert section.count("\n| ") == 3  # header + 2 cells (the separator line starts "|---")


def test_the_learned_value_variant_is_named_from_its_recorded_params():
    from studies.sweeps.report_closed import variant

    def rec(value: str = "learned") -> dict:
        return {"cell": {"value": value}, "value_model_hash": "h"}

    def vals(**vp) -> dict:
        base = {"loss": "mse", "calibration": "none", "state_rollouts": 0, "targets": "return",
                "td_lambda": 0.8, "smc_states": False}
        return {"h": {"params": {**base, **vp}}}

    assert variant(rec(), vals()) == "regression head"
    assert variant(rec(), vals(loss="bce", calibration="isotonic", state_rollouts=4)) == (
        "Bernoulli head; isotonic calibration; 4 more rollouts per state")
    assert variant(rec(), vals(loss="bce", targets="td", smc_states=True)) == (
        "Bernoulli head; TD(λ = 0.8) targets; plus AMC-visited states")
    assert variant(rec("rollout"), vals()) == "" and variant(rec(), {}) == ""
