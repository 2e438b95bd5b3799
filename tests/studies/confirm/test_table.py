"""The results table recomputes from the committed files: docs/evidence.md carries exactly what
the committed records give, the exact sign-flip p equals enumeration, Holm's step-down, and a
confirmatory run shows numbers only once every declared pair is kept."""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from studies.confirm import once
from studies.confirm.analysis import compare, exact_sign_flip_p, holm
from studies.confirm.protocol import load
from studies.confirm.table import BEGIN, END, confirmatory, section

ROOT = Path(__file__).resolve().parents[3]


def test_docs_evidence_carries_the_table_the_committed_files_give() -> None:
    doc = (ROOT / "docs/evidence.md").read_text()
    assert doc.count(BEGIN) == 1 and doc.count(END) == 1
    got = section(ROOT)
    assert got in doc
    # the corrections of issue 51, as computed: WebShop's same-pairs ceiling and share,
    # SciWorld's learned cell counted in games, the LLM set split into pilot and untouched
    assert "+0.186 (62%)" in got and "| 14 × 2 |" in got
    assert "its 48 untouched tasks" in got and "| 48 × 3 |" in got


def test_the_exact_sign_flip_p_is_the_enumeration() -> None:
    rng = np.random.default_rng(3)
    for n in (1, 4, 9, 13):
        d = np.round(rng.normal(0.05, 0.2, n) * 12) / 12  # a 1/12 grid (e.g. 6 seeds, 2 arms)
        obs = abs(d.sum())
        hits = sum(abs(np.dot(s, d)) >= obs - 1e-9
                   for s in itertools.product((-1, 1), repeat=n))
        p, exact = exact_sign_flip_p(d)
        assert exact and p == pytest.approx(hits / 2 ** n)
    assert exact_sign_flip_p([0.0, 0.0]) == (1.0, True)
    assert not exact_sign_flip_p(np.sqrt([2.0, 3.0, 5.0]))[1]  # no grid: Monte Carlo


def test_holm_steps_down_in_the_declared_family() -> None:
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.01, 0.04, 0.03], 4) == pytest.approx([0.04, 0.09, 0.09])
    with pytest.raises(ValueError):
        holm([0.1, 0.2], 1)


def test_compare_pairs_by_task_and_averages_seeds() -> None:
    rows = [("a", 0, 0.0, 1.0), ("a", 1, 0.0, 0.0), ("b", 0, 0.5, 0.5), ("c", 0, 0.0, 0.5)]
    c = compare(rows)
    assert (c.tasks, c.pairs) == (3, 4)
    assert c.diff == pytest.approx((0.5 + 0.0 + 0.5) / 3)  # task a's seeds averaged first


def test_a_confirmatory_row_has_numbers_only_when_its_run_is_done(tmp_path: Path) -> None:
    (tmp_path / "studies/confirm").mkdir(parents=True)
    shutil.copy(ROOT / "studies/confirm/sciworld.json", tmp_path / "studies/confirm")
    p = load(tmp_path / "studies/confirm/sciworld.json")
    folder = once.run_dir(tmp_path / "evidence/confirm", p.id)
    once.claim(folder, p.id, p.sha256)
    rng = np.random.default_rng(0)
    for i in range(40):
        m = {arm: {"metrics": {"oracle_best": float(rng.integers(0, 3) / 2)}} for arm in p.arms}
        once.keep_row(folder, {"task_id": str(i), "seed": 0, **m})
    assert all(r["delta"] == "–" and r["status"].startswith("running")
               for r in confirmatory(tmp_path))
    once.finish(folder, {"rows": 40})
    rows = confirmatory(tmp_path)
    kept = once.kept_rows(folder)
    want = compare([(r["task_id"], 0, r["bon"]["metrics"]["oracle_best"],
                     r["amc"]["metrics"]["oracle_best"]) for r in kept])
    assert rows[0]["status"] == "confirmatory" and rows[0]["size"] == "40 × 1"
    assert rows[0]["delta"].startswith(f"{want.diff:+.3f}")
    assert rows[0]["holm"].endswith("(of 2)")  # the family: the protocols present
    assert json.loads((folder / once.DONE).read_text())["rows"] == 40


def test_a_running_row_counts_the_drawn_pairs(tmp_path: Path) -> None:
    """A protocol that declares no size (TextCraft: a whole split) counts its drawn tasks."""
    (tmp_path / "studies/confirm").mkdir(parents=True)
    shutil.copy(ROOT / "studies/confirm/textcraft.json", tmp_path / "studies/confirm")
    p = load(tmp_path / "studies/confirm/textcraft.json")
    folder = once.run_dir(tmp_path / "evidence/confirm", p.id)
    once.claim(folder, p.id, p.sha256)
    assert "running ((task, seed)" in confirmatory(tmp_path)[0]["status"]
    (folder / "tasks.json").write_text(json.dumps({"tasks": [{"task_id": str(i)}
                                                             for i in range(54)]}))
    assert confirmatory(tmp_path)[0]["status"].startswith(f"running ({54 * len(p.seeds)} (task")


def test_a_study_s_own_test_cells_are_their_own_holm_family() -> None:
    from studies.confirm.table import exploratory

    rows = exploratory(ROOT)
    (r,) = [r for r in rows if "re-chosen" in r["comparison"]]  # issue 50's re-choice
    tests = sorted((ROOT / "evidence/sim-value-options/runs/summary").glob("test-*.json"))
    assert r["holm"].endswith(f"(of {len(tests)})") and len(tests) == 3
    sweep = [x for x in rows if x["bench"] == "textcraft" and "β 0.05" in x["regime"]
             and "re-chosen" not in x["comparison"]]
    assert sweep and all(x["holm"].endswith("(of 48)") for x in sweep)  # not mixed in
