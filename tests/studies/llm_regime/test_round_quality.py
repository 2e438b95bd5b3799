"""Each round's value on the fixed held-out set, as the rounds section renders it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from studies.llm_regime import rounds_doc as rep
from studies.llm_regime.results_doc import write_results_doc
from studies.llm_regime.round_quality import HELDOUT_FILE, rounds_plot
from tests.studies.llm_regime.test_rounds_report import _entries, _write_dir


def _heldout(versions: dict[int, int]) -> dict[str, Any]:
    return {"source": "kept/bon@4__seed*", "states": 3424, "rollouts": 720, "tasks": 60,
            "success_rate": 0.0917, "resample_steps": [2, 4],
            "rounds": [{"round": r, "value": f"models:/m/{v}", "auc": 0.75 + r / 100,
                        "auc_within": 0.52 + r / 10, "auc_within_step2": 0.515,
                        "pearson": 0.28, "mae": 0.13} for r, v in versions.items()]}


def _folder(root: Path, versions: dict[int, int]) -> Path:
    entries = _entries()
    for e in entries:
        e["ledger"]["steps"]["train"]["model"] = "m"
    src = _write_dir(root, entries)
    (src / HELDOUT_FILE).write_text(json.dumps(_heldout(versions)))
    return src


def test_each_scored_round_gets_a_row_and_a_stale_version_is_not_shown(tmp_path: Path) -> None:
    # round 1 trained v2; a score of v5 (another training of round 1) is not its value's
    src = _folder(tmp_path / "rounds", {0: 1, 1: 5})
    text = "\n".join(rep.rounds_section(rep.load_rounds(src), "R", "src", None))
    assert "one fixed held-out set: the 3424 prefix states of 720 prior rollouts" in text
    rows = [x for x in text.splitlines() if x.startswith("| 0 | v1 |")]
    # AUC, within, within at step 2, at step 4 (not scored: n/a), Pearson, MAE
    assert rows == ["| 0 | v1 | 0.750 | 0.520 | 0.515 | n/a | 0.280 | 0.130 |"]
    assert not any(x.startswith("| 1 | v5 |") for x in text.splitlines())


def test_no_held_out_scores_no_table(tmp_path: Path) -> None:
    src = _write_dir(tmp_path / "rounds", _entries())
    assert "fixed held-out set" not in "\n".join(
        rep.rounds_section(rep.load_rounds(src), "R", "src", None))


def test_the_resolved_copy_carries_the_held_out_table(tmp_path: Path) -> None:
    src = _folder(tmp_path / "rounds", {0: 1, 1: 2})
    out = tmp_path / "doc" / "results.md"
    write_results_doc(None, tmp_path, out, rounds=("Rounds", src))
    again = tmp_path / "doc2" / "results.md"
    write_results_doc(None, tmp_path, again,
                      rounds=("Rounds", out.parent / "results-assets" / "rounds.json"))
    first = [x for x in out.read_text().splitlines() if x.startswith("| 1 | v2 |")]
    assert first == ["| 1 | v2 | 0.760 | 0.620 | 0.515 | n/a | 0.280 | 0.130 |"]
    assert first == [x for x in again.read_text().splitlines() if x.startswith("| 1 | v2 |")]


def test_the_plot_reads_the_held_out_quality_when_scored(tmp_path: Path) -> None:
    entries = rep.load_rounds(_folder(tmp_path / "rounds", {0: 1, 1: 2}))
    rows = [rep.round_row(entries, i) for i in range(len(entries))]
    held = rounds_plot(rows, entries, tmp_path / "a.png").read_bytes()
    assert held == rounds_plot(rows, entries, tmp_path / "b.png").read_bytes()  # reproducible
    bare = [{k: v for k, v in e.items() if k != "heldout"} for e in entries]
    assert held != rounds_plot(rows, bare, tmp_path / "c.png").read_bytes()
