"""The declared test set's section: the primary row, its verdict, the realised power."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from amc.stats import t_power
from studies.llm_regime import declared_section as dec
from studies.llm_regime.results_doc import write_results_doc

ROOT = Path(__file__).resolve().parents[3]
DECLARED = ROOT / "studies/llm_regime/declared/llm-regime-testset60.json"
EVAL = ROOT / "evidence/llm-regime/testset60/evaluation.json"


def _row(d: float, lo: float, hi: float, p: float, se: float = 0.03, tasks: int = 60) -> dict:
    k = "oracle_best"
    return {"baseline": "bon@4", "tasks": tasks, "runs": 3 * tasks, k: d, k + "_lo": lo,
            k + "_hi": hi, k + "_p": p, k + "_se": se}


def test_separable_only_when_the_interval_and_the_exact_p_agree() -> None:
    assert dec.primary_verdict(_row(0.1, 0.02, 0.18, 0.01), "oracle_best").startswith(
        "separable: AMC is better")
    assert dec.primary_verdict(_row(-0.1, -0.18, -0.02, 0.01), "oracle_best").endswith("worse")
    assert "includes 0" in dec.primary_verdict(_row(0.03, -0.03, 0.09, 0.4), "oracle_best")
    assert "exact p = 0.125" in dec.primary_verdict(_row(0.1, 0.01, 0.2, 0.125), "oracle_best")


def test_realised_power_detects_its_mde_with_the_declared_power() -> None:
    plan = {"level": 0.05, "power": 0.8, "alternative": "two-sided"}
    r = dec.realised_power(_row(0.0, -0.1, 0.1, 1.0, se=0.03, tasks=60), "oracle_best", plan)
    assert r["sd"] == pytest.approx(0.03 * math.sqrt(60))
    assert t_power(r["mde"], r["sd"], 60, level=0.05, alternative="two-sided") == \
        pytest.approx(0.8, abs=1e-6)


def test_a_run_of_another_comparison_is_refused() -> None:
    declared = {"name": "x", "primary": {"a": "smc@4+challenger", "b": "bon@4",
                                         "metric": "oracle_best"}}
    with pytest.raises(ValueError, match="no paired row"):
        dec.primary_row(declared, {"paired": {"smc@4+challenger": {"baseline": "bon@8"}}})


def test_the_results_doc_opens_with_the_committed_declared_result(tmp_path: Path) -> None:
    out = write_results_doc(None, tmp_path, tmp_path / "r.md",
                            declared=[("Declared", DECLARED, EVAL)])
    text = out.read_text()
    run = json.loads((tmp_path / "r-assets" / "llm-regime-testset60.json").read_text())
    row = run["paired"]["smc@4+challenger"]
    assert text.index("## Declared") < text.index("| method |")
    assert (f"= {row['oracle_best']:+.3f} [{row['oracle_best_lo']:+.3f}, "
            f"{row['oracle_best_hi']:+.3f}], exact sign-flip p {row['oracle_best_p']:.3g} "
            "over 60 tasks") in text
    assert "tasks listed in `amc/pipeline/declared/llm-regime-testset60.json`" in text
