"""The drift demo's story, fast: its params, the fall and recovery across checks, the gate on a tie.

The demo itself (``tests/studies/drift/test_demo.py``, slow) runs the real stages; here the parts
that turn its checks into claims run on hand-built check records of the drift monitor's shape:
a gain change between two checks is paired *by task* (each check has its own fresh seeds), the
recovery compares the retrained head's check with the stale head's, and with the demo's
``promote.max_mde`` a drifted champion is not replaced on a tie (every difference 0).
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from amc.pipeline.gate_stats import gate_test, untested_reason
from amc.pipeline.params import load_params
from amc.stats import paired_difference
from studies.drift.demo import (
    CHANGE,
    SKILLS_A,
    SKILLS_B,
    across,
    chosen_params,
    demo_params,
    row,
    story,
    story_lines,
)
from tests.flows.conftest import ROOT


def doc_script() -> ModuleType:
    """The generator of docs/pipeline.md's drift section (:mod:`studies.drift.demo_doc`)."""
    return importlib.import_module("studies.drift.demo_doc")


def check(k: int, gains: dict[str, list[float]], drift: bool = False) -> dict:
    """A drift-monitor record whose per-(task, seed) gains are ``gains`` (seeds of check k)."""
    from amc.monitor.drift import gain_by_task

    champ = {(t, 10 * k + i): 1.0 + g for t, gs in gains.items() for i, g in enumerate(gs)}
    bon = {key: 1.0 for key in champ}
    gi = paired_difference(champ, bon).to_dict()
    return {"check": k, "version": "1", "drift": drift, "reasons": [], "seeds": [10 * k],
            "baseline": {"gain": 0.2}, "now": {"gain": gi["mean"], "gain_interval": gi,
                                               "gain_by_task": gain_by_task(champ, bon),
                                               "success": 0.5}}


@pytest.mark.parametrize("scale", ["measure", "toy"])
def test_demo_params_are_valid_and_start_on_prior_a(tmp_path: Path, scale: str) -> None:
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(demo_params(scale)))
    p = load_params(path)
    assert p.prior.options == {"q": 0.5, "skills": SKILLS_A}
    assert p.promote.metric == "success" and p.promote.max_mde is not None
    assert demo_params(scale)["smc"] == demo_params("measure")["smc"]  # sizes differ only
    assert SKILLS_A.keys() == SKILLS_B.keys() and SKILLS_A != SKILLS_B
    with pytest.raises(ValueError):
        demo_params("huge")


def test_the_demo_plays_the_change_the_declared_search_chose(tmp_path: Path) -> None:
    """CHANGE is the feedback search's chosen row (priors, regime overrides, beta), and the
    demo's params are the searched regime's: the base params with those overrides, on A."""
    doc = json.loads((ROOT / "evidence/drift/candidates-feedback.json").read_text())
    chosen = doc["chosen"]
    assert chosen is not None
    assert (chosen["prior_a"], chosen["prior_b"]) == (CHANGE["before"], CHANGE["after"])
    assert chosen.get("overrides", {}) == CHANGE["overrides"]
    for scale in ("measure", "toy"):
        base, data = demo_params(scale), chosen_params(scale)
        assert data["smc"]["beta"] == chosen["beta"]
        assert data["env"]["options"] == {**base["env"]["options"], "reward": "binary"}
        assert {k: v for k, v in data.items() if k not in ("env", "prior")} == {
            k: v for k, v in base.items() if k not in ("env", "prior")}
        path = tmp_path / f"{scale}.yaml"
        path.write_text(yaml.safe_dump(data))
        assert load_params(path).prior.options == CHANGE["before"]


def test_fall_and_recovery_are_paired_by_task_across_checks() -> None:
    a = row("A", "A", {}, check(0, {"t1": [0.5, 0.5], "t2": [0.0, 1.0], "t3": [0.0, 0.0]}))
    b = row("B", "B", {}, check(1, {"t1": [0.0, 0.0], "t2": [0.0, 0.0], "t4": [1.0]}))
    c = row("C", "C", {}, check(2, {"t1": [1.0, 0.0], "t2": [0.5, 0.5], "t3": [1.0]}))
    fall = across(a, b)
    assert fall is not None and fall["tasks"] == 2  # t3, t4: in one check only
    assert fall["mean"] == pytest.approx(-0.5)  # t1: 0 - 0.5, t2: 0 - 0.5 (later - earlier)
    out = story([a, b, c], [{"round": 0}, {"round": 1, "delta": 0.5}])
    assert out["fall"] == fall and out["gate"] == {"round": 1, "delta": 0.5}
    assert out["recovery"] is not None and out["recovery"]["mean"] == pytest.approx(0.5)
    lines = story_lines({**out, "checks": [a, b, c], "decisions": []})
    assert any(x.startswith("- fall: -0.500") for x in lines)
    no_retrain = story([a, b], [{"round": 0}])
    assert no_retrain["recovery"] is None and no_retrain["gate"] is None


def test_a_drifted_champion_is_not_replaced_on_a_tie() -> None:
    """24 tasks, every difference 0: the drifted-champion test (non-inferiority at
    -drift_margin) passes a tie; with the demo's max_mde there is no mde, so no test."""
    p = demo_params("measure")["promote"]
    t = gate_test([0.0] * 24, min_effect=-0.05, level=0.025)
    assert t.passes  # what replaced the demo's champion before
    assert "no mde" in str(untested_reason(t, max_mde=p["max_mde"]))
    assert untested_reason(gate_test([0.2, 0.0, 0.1, 0.3] * 6, min_effect=-0.05, level=0.025),
                           max_mde=p["max_mde"]) is None  # a real difference is tested


def test_the_docs_drift_section_is_generated_from_the_committed_runs() -> None:
    """docs/pipeline.md's block is what ``studies/drift/demo_doc.py`` makes of the committed
    JSON (so every measured number in it is), and its prose names the demo's skill maps."""
    doc = doc_script()
    text = doc.DOC.read_text()
    assert doc.section() in text
    for s in (SKILLS_A, SKILLS_B):
        assert f"(`get` {s['get']:g}, `craft` {s['craft']:g})" in text


def test_the_chosen_row_is_read_with_its_gains_over_best_of_n() -> None:
    """A row that meets the rule with a stale head already below Best-of-N is not described
    as a head that gains; one whose heads both gain is."""
    doc = doc_script()
    g = {"below": {"lo": -0.2, "hi": -0.05}, "zero": {"lo": -0.02, "hi": 0.1},
         "above": {"lo": 0.01, "hi": 0.2}}
    harm = doc.reading({"gains": {"g0": g["below"], "g2": g["zero"]}})
    assert "(g0) is below 0" in harm and "(g2) is not separated from 0" in harm
    assert "not a retrained head that beats" in harm
    gain = doc.reading({"gains": {"g0": g["above"], "g2": g["above"]}})
    assert "both heads gain" in gain and "(g2) is above 0" in gain


def test_the_demo_lines_call_a_flag_on_the_unchanged_prior_a_false_alarm() -> None:
    """A drift mark at check A (nothing changed yet) is named a false alarm, a fall whose
    interval straddles 0 is not called separable; neither is said when it is not so."""
    doc = doc_script()
    a = row("A", "A", {}, check(0, {"t1": [0.5], "t2": [0.0]}, drift=True))
    b = row("B", "B", {}, check(1, {"t1": [0.0], "t2": [0.5]}, drift=True))
    straddle = {"mean": -0.1, "lo": -0.3, "hi": 0.1, "p": 0.4}
    apart = {"mean": -0.2, "lo": -0.3, "hi": -0.1, "p": 0.01}
    lines = "\n".join(doc.demo_lines({"checks": [a, b], "decisions": [], "fall": straddle,
                                      "recovery": None}))
    assert "check 0 ran on the prior its head was trained on" in lines
    assert "not separable here" in lines
    quiet = "\n".join(doc.demo_lines({"checks": [{**a, "drift": False}, b], "decisions": [],
                                      "fall": apart, "recovery": None}))
    assert "false alarm" not in quiet and "not separable" not in quiet


def test_the_kept_first_run_is_compared_gain_by_gain(tmp_path: Path) -> None:
    doc = doc_script()
    doc.DEMO = tmp_path / "demo.json"
    doc.DEMO.write_text(json.dumps({"checks": [{"gain": 0.1}, {"gain": -0.2}]}))
    assert "the same as" in doc.same_gains({"checks": [{"gain": 0.1}, {"gain": -0.2}]})[0]
    assert "not those of" in doc.same_gains({"checks": [{"gain": 0.1}, {"gain": -0.1}]})[0]
