"""A kept summary's paired block recomputed from its gzipped results (the LLM regime's copy)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from studies.llm_regime.kept_pairs import main, refresh

REPO = Path(__file__).resolve().parents[3]
SUMMARY = REPO / "docs/results-assets/llm-regime/summary.json"
KEPT = REPO / "evidence/llm-regime/eval"


def test_refresh_reproduces_the_kept_intervals_and_adds_the_exact_p(tmp_path: Path) -> None:
    before = json.loads(SUMMARY.read_text())
    copy = tmp_path / "summary.json"
    stripped = {**before, "paired": {m: {k: v for k, v in r.items() if not k.endswith("_p")}
                                     for m, r in before["paired"].items()}}
    copy.write_text(json.dumps(stripped))
    after = refresh(copy, KEPT)
    assert after["paired"] == before["paired"]  # the committed copy is what the kept data give
    amc4 = after["paired"]["smc@4+challenger"]
    assert amc4["oracle_best_p"] == pytest.approx(0.25)  # 3 tasks differ, all one way: 2/8
    assert after["paired"]["smc@4"]["oracle_best_p"] == pytest.approx(0.125)
    new = ("paired", "paired_values")
    assert {k: v for k, v in after.items() if k not in new} == \
        {k: v for k, v in stripped.items() if k not in new}
    zs = after["paired_values"]  # AMC minus zero-shot SMC at each N, with the calls spent
    assert {r["baseline"] for r in zs.values()} == {"smc@4", "smc@8", "smc@15"}
    assert all(r["baseline_calls"] > r["calls"] for r in zs.values())


def test_bad_input_is_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["only-one"]) == 2
    shutil.copy(SUMMARY, tmp_path / "s.json")
    assert main([str(tmp_path / "s.json"), str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(x.startswith("error: ") for x in err)
