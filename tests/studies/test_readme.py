"""The README's measured paragraph is generated: committed == regenerated, and its verdicts."""

from __future__ import annotations

from pathlib import Path

import pytest

from studies import readme

ROOT = Path(__file__).resolve().parents[2]


def test_the_committed_readme_paragraph_is_what_the_committed_evidence_generates() -> None:
    assert readme.main(["--root", str(ROOT), "--check"]) == 0


def test_a_hand_edited_number_fails_the_check(tmp_path: Path) -> None:
    (tmp_path / readme.EVIDENCE).parent.mkdir(parents=True)
    (tmp_path / readme.EVIDENCE).write_bytes((ROOT / readme.EVIDENCE).read_bytes())
    text = (ROOT / "README.md").read_text()
    para = text.split(readme.BEGIN)[1].split(readme.END)[0]
    assert "+0.028" in para  # AMC@4 − Best-of-4 on the declared 60-task set
    (tmp_path / "README.md").write_text(text.replace("+0.028", "+0.128"))
    assert readme.main(["--root", str(tmp_path), "--check"]) == 1
    assert readme.main(["--root", str(tmp_path)]) == 0  # rewritten from the sources ...
    assert (tmp_path / "README.md").read_text() == text  # ... back to the committed text


def test_missing_markers_or_table_are_refused() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        readme.render("no markers here", "x")
    with pytest.raises(ValueError, match="no results table"):
        readme.results_table("# evidence\n**In short:** x")


def test_the_readme_table_is_compact_and_its_legend_short() -> None:
    """Issue 63: seven columns at a glance, one sentence per cell at most, a legend of short
    lines; the regimes, means and reasons live in docs/evidence.md."""
    para = (ROOT / "README.md").read_text().split(readme.BEGIN)[1].split(readme.END)[0]
    table = [line for line in para.splitlines() if line.startswith("|")]
    assert table[0] == ("| benchmark | prior | comparison | gain [95% CI] | p (Holm) | "
                        "share of ceiling | status |")
    assert all(line.count(" | ") == 6 for line in table[2:])
    assert all(" − " in readme.table_rows("\n".join(table))[i]["comparison"]
               for i in range(len(table) - 2))  # every comparison names its baseline
    assert "| 0.013 (0.038) | 29% | confirmatory |" in para  # TextCraft: p, Holm, share
    assert max(len(line) for line in para.splitlines() if not line.startswith("|")) <= 100
