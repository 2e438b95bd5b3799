"""The "Value methods" section: every declared candidate in order, its own cell's gain and its
own value's figures, recomputed here from the committed records (and on hand-built ones where
the metrics differ, so reading the wrong metric or the wrong value shows)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import spearmanr

from amc.value.offline import FIGURES
from studies.sweeps.config import CellParams, ValueParams
from studies.sweeps.evidence import load_runs, load_values
from studies.sweeps.protocol import Protocol, load_protocol
from studies.sweeps.report_methods import methods_section

REPO = Path(__file__).resolve().parents[3]
VALUE_KEYS = ("loss", "calibration", "state_rollouts", "targets", "td_lambda", "smc_states")


def task_mean_gain(rec: dict, metric: str = "oracle_best") -> float:
    by: dict[str, list[float]] = {}
    for r in rec["rows"]:
        by.setdefault(r["task_id"], []).append(r["amc"]["metrics"][metric]
                                               - r["bon"]["metrics"][metric])
    return float(np.mean([np.mean(v) for v in by.values()]))


def rows_of(section: str) -> dict[str, str]:
    table = section.split("### Which", 1)[0]
    return {line.split(" | ")[0][2:]: line for line in table.splitlines()
            if line.startswith("| ") and not line.startswith(("| candidate", "| rollout"))}


def fig(x: float) -> str:
    return "∞" if np.isinf(x) else f"{x:.3f}"


def test_section_matches_the_committed_cells_and_values():
    protocol = load_protocol(REPO / "sweeps/protocol-issue30.yaml")
    values = load_values(REPO / "evidence")
    runs = [r for r in load_runs(REPO / "evidence") if r["cell"].get("menu_form")]
    text = methods_section(protocol, runs, values)
    rows = rows_of(text)
    assert list(rows) == [c.name for c in protocol.candidates]  # the protocol's order
    base = {**ValueParams().model_dump(), **protocol.value_base}
    keys = (*VALUE_KEYS, *protocol.value_base)  # the rendering study's cells differ in these
    found = 0
    for c in protocol.candidates:
        want_value = {k: c.value.get(k, base[k]) for k in keys}
        mine = [r for r in runs if r["cell"]["split"] == "validation"
                and r["cell"]["value"] == "learned" and r["cell"]["beta"] == c.cell["beta"]
                and r["cell"]["sharpen"] == c.cell.get("sharpen", 1.0)
                and r["cell"]["val_tasks"] == 116 and r["cell"]["n"] == 4
                and {k: values.get(r.get("value_model_hash"), {}).get("params", {}).get(k)
                     for k in keys} == want_value]
        if not mine:
            assert rows[c.name].endswith("| not run yet |")
            continue
        found += 1
        if len(mine) > 1:  # a rerun harvested beside the first: the row must say so
            assert f"| {len(mine)} matching cells (" in rows[c.name]
            continue
        rec = mine[0]
        off = values[rec["value_model_hash"]]["offline"]["learned"]
        assert f"| `{rec['value_model_hash']}` | " in rows[c.name]
        assert " | ".join(fig(off[f]) for f in FIGURES) in rows[c.name]
        assert f"| {task_mean_gain(rec):+.3f} [" in rows[c.name]
    assert found >= 7 and f"**{found} of 12 run**" in text
    assert ("Provisional pick" in text) == (found < 12 and "**No choice**" not in text)


def test_predictiveness_column_is_spearman_over_the_settings_values():
    protocol = load_protocol(REPO / "sweeps/protocol-issue30.yaml")
    values = load_values(REPO / "evidence")
    runs = [r for r in load_runs(REPO / "evidence") if r["cell"].get("menu_form")]
    text = methods_section(protocol, runs, values)
    rows = rows_of(text)
    names = [c.name for c in protocol.candidates if c.cell == {"beta": 0.05}
             and not rows[c.name].endswith("not run yet |")]
    # exact figures, not the table's 3 decimals (rounding makes ties the report does not have)
    vids = [re.search(r"`([^`]+)`", rows[n]).group(1) for n in names]
    gains = [task_mean_gain(next(r for r in runs if r.get("value_model_hash") == v
                                 and r["cell"]["split"] == "validation"
                                 and r["cell"]["beta"] == 0.05 and r["cell"]["sharpen"] == 1
                                 and r["cell"]["val_tasks"] == 116)) for v in vids]
    head = text.split("### Which", 1)[1]
    col = head.splitlines()[4].split(" | ").index("beta = 0.05")
    ll = [values[v]["offline"]["learned"]["log_loss"] for v in vids]
    rho = spearmanr([-x for x in ll], gains)[0]
    line = next(x for x in head.splitlines() if x.startswith("| log-loss |"))
    assert line.split(" | ")[col].startswith(f"{rho:+.2f} (n = {len(names)}, p ")


def cell(beta: float, gain: float, wrong: float, seed: int, value: str = "learned",
         vid: str = "v") -> dict:
    """A validation cell whose oracle_best gain is ``gain`` (max_weight_reward's is ``wrong``)."""
    rng = np.random.default_rng(seed)
    c = CellParams(split="validation", beta=beta, value=value, val_tasks=10,
                   seeds=(0, 1)).model_dump(mode="json")
    rows = []
    for t in range(10):
        for s in range(2):
            b = float(rng.random() < 0.4)
            rows.append({"task_id": str(t), "seed": s,
                         "bon": {"metrics": {"oracle_best": b, "max_weight_reward": b}},
                         "amc": {"metrics": {"oracle_best": b + gain,
                                             "max_weight_reward": b + wrong}}})
    return {"name": f"validation-{beta}-{value}-{vid}", "cell": c, "rows": rows,
            "value_model_hash": vid, "experiment": f"e-{vid}-{seed}"}


def value(loss: str, cal: str, ll: float) -> dict:
    return {"params": {"loss": loss, "calibration": cal},
            "offline": {"learned": {f: 0.5 for f in FIGURES} | {"log_loss": ll},
                        "ceiling": {f: 0.1 for f in FIGURES}}}


def toy() -> Protocol:
    return Protocol.model_validate({
        "issue": 99, "choice": {"metric": "oracle_best", "tie": 0.01},
        "validation": {"tasks": 10, "seeds": 2, "basis": "x",
                       "variance": {"between": 0.1, "within": 0.1, "seeds": 2}},
        "candidates": [{"name": "reg", "value": {}, "cell": {"beta": 0.05}},
                       {"name": "bern", "value": {"loss": "bce"}, "cell": {"beta": 0.05}},
                       {"name": "platt", "value": {"loss": "bce", "calibration": "platt"},
                        "cell": {"beta": 0.05}},
                       {"name": "iso", "value": {"loss": "bce", "calibration": "isotonic"},
                        "cell": {"beta": 0.05}}]})


def test_hand_built_rows_pick_and_correlation():
    values = {"a": value("mse", "none", 0.40), "b": value("bce", "none", 0.50),
              "c": value("bce", "platt", 0.30)}
    runs = [cell(0.05, 0.02, 0.30, 1, vid="a"), cell(0.05, -0.05, 0.00, 2, vid="b"),
            cell(0.05, 0.10, -0.2, 3, vid="c"), cell(0.05, 0.5, 0.5, 4, "rollout", "r"),
            cell(0.25, 0.9, 0.9, 5, vid="c")]  # another setting: no candidate's
    text = methods_section(toy(), runs, values)
    rows = rows_of(text)
    assert list(rows) == ["reg", "bern", "platt", "iso"]
    assert "| +0.020 [" in rows["reg"] and "| -0.050 [" in rows["bern"]
    assert "| +0.100 [" in rows["platt"] and rows["iso"].endswith("not run yet |")
    assert "| 0.300 |" in rows["platt"] and "| 0.500 |" in rows["bern"]
    assert "**3 of 4 run**" in text and "**Provisional pick: platt**" in text
    ceiling = next(x for x in text.splitlines() if x.startswith("| rollout ceiling"))
    assert "| 0.100 |" in ceiling and ceiling.endswith(" +0.500 [+0.500, +0.500], p 0.002 |")
    # log-loss 0.3 < 0.4 < 0.5 goes with gain 0.10 > 0.02 > -0.05: rho = +1 at exact p 1/3
    line = next(x for x in text.splitlines() if x.startswith("| log-loss |"))
    assert "+1.00 (n = 3, p 0.33)" in line and "**No figure is determined**" in text


def test_a_full_list_chooses_and_a_duplicate_blocks_the_choice():
    values = {"a": value("mse", "none", 0.4), "b": value("bce", "none", 0.5),
              "c": value("bce", "platt", 0.3), "d": value("bce", "isotonic", 0.2)}
    runs = [cell(0.05, 0.02, 0.3, 1, vid="a"), cell(0.05, -0.05, 0.0, 2, vid="b"),
            cell(0.05, 0.10, 0.0, 3, vid="c"), cell(0.05, 0.095, 0.0, 4, vid="d")]
    text = methods_section(toy(), runs, values)
    assert "**Choice: platt**" in text and "4 of 4 run" in text  # iso within the tie: earlier
    text = methods_section(toy(), [*runs, cell(0.05, 0.3, 0.3, 9, vid="d")], values)
    assert "**No choice**: iso" in text and "2 matching cells" in rows_of(text)["iso"]


@pytest.mark.parametrize("drop", ["params", "offline"])
def test_a_value_without_its_record_is_not_silently_a_candidate(drop):
    values = {"a": value("mse", "none", 0.4)}
    runs = [cell(0.05, 0.02, 0.3, 1, vid="a")]
    if drop == "params":
        values["a"].pop("params")
        assert methods_section(toy(), runs, values).count("not run yet") == 4
    else:
        values["a"]["offline"] = {}
        row = rows_of(methods_section(toy(), runs, values))["reg"]
        assert "| `a` | " + " | ".join(["–"] * len(FIGURES)) + " | +0.020 [" in row


def test_committed_doc_holds_the_section():
    doc = (REPO / "docs/evidence.md").read_text()
    protocol = load_protocol(REPO / "sweeps/protocol-issue30.yaml")
    runs = [r for r in load_runs(REPO / "evidence") if r["cell"].get("menu_form")]
    assert methods_section(protocol, runs, load_values(REPO / "evidence")) in doc
