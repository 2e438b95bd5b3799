"""docs/results.md's introduction: a template whose numbers all come from committed files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from studies.llm_regime import intro

ROOT = Path(__file__).resolve().parents[3]
TEMPLATE = ROOT / "docs/results-intro.txt"
SUMMARY = ROOT / "docs/results-assets/llm-regime/summary.json"
DECLARED = ROOT / "studies/llm_regime/declared/llm-regime-testset60.json"


def fields() -> dict:
    return intro.intro_fields(SUMMARY, DECLARED, ROOT / "docs/evidence.md")


def test_the_committed_template_types_no_number() -> None:
    assert intro.digits_outside_fields(TEMPLATE.read_text()) == []
    typed = TEMPLATE.read_text().replace("{pearson}", "0.301")
    assert intro.digits_outside_fields(typed) == ["0.301,"]  # a typed figure is caught


def test_fields_are_read_from_the_committed_records() -> None:
    f = fields()
    cal = json.loads((SUMMARY.parent / "calibration-budget5.json").read_text())
    assert f["budget"] == 5 and f["cal_hi"] == cal["k_hi"] and f["rollouts"] == cal["rollouts"]
    assert f["gap"] == f"{cal['gap']['mean']:+.3f} [{cal['gap']['lo']:+.3f}, " \
        f"{cal['gap']['hi']:+.3f}]"
    assert f["declared_tasks"] == len(json.loads(DECLARED.read_text())["tasks"]) == 60
    # β = 0.1 ran, the sweep chose 0.05: the sentence must say "is not"
    assert (f["beta"], f["sweep_beta"], f["beta_is"]) == ("0.1", "0.05", "is not")


def test_the_sweeps_choice_is_computed_not_assumed() -> None:
    assert intro.sweep_choice("**In short:** x (q = 0.4, β = 0.1, every 3, N = 4)") == (0.1, 3)
    with pytest.raises(ValueError, match="headline regime"):
        intro.sweep_choice("# evidence\nno headline")


def test_an_unknown_field_is_named() -> None:
    with pytest.raises(ValueError, match=r"\['gapp'\]"):
        intro.render_intro("gap {gapp}", fields())
    assert "+0.201" in intro.render_intro(TEMPLATE.read_text(), fields())


def test_the_command_prints_the_filled_paragraph(capsys: pytest.CaptureFixture[str]) -> None:
    args = [str(TEMPLATE), str(SUMMARY), str(DECLARED), str(ROOT / "docs/evidence.md")]
    assert intro.main(args) == 0
    assert capsys.readouterr().out.strip() == intro.render_intro(
        TEMPLATE.read_text().strip(), fields())
    assert intro.main(args[:3]) == 2 and "usage" in capsys.readouterr().err
    assert intro.main([*args[:2], "nope.json", args[3]]) == 2
    assert "nope.json" in capsys.readouterr().err
