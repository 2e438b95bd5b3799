"""The rounds report: per-round rows from hand-built ledgers and declared-set summaries."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from studies.llm_regime import rounds_doc as rep
from studies.llm_regime.results_doc import write_results_doc


def _ledger(r: int, records: int, rows: int, auc: float, promote: bool | None = None,
            p: float = 0.2, mde: float = 0.07, status: str = "closed") -> dict[str, Any]:
    steps: dict[str, Any] = {
        "collect": {"records": records // 15, "rollouts": records, "seeds": [r * 1000]},
        "dataset": {"rows": {"train": rows - 20, "validation": 10, "test": 10},
                    "rounds": list(range(r + 1))},
        "train": {"version": r + 1, "result": {"best_val_auc": auc, "best_val_pearson": auc - 0.2,
                                               "best_val_mae": 0.3}}}
    if promote is not None:
        steps["promote"] = {"promote": promote, "tested": True, "delta": 0.01, "p_value": p,
                            "mde": mde}
    return {"round": r, "status": status, "seeds": [r * 1000], "steps": steps}


def _eval(gain: float, lo: float, hi: float, p: float, ns: tuple[int, ...] = (4,)
          ) -> dict[str, Any]:
    k = "oracle_best"
    paired = {f"smc@{n}+challenger": {"baseline": f"bon@{n}", "tasks": 60, "runs": 180,
                                      k: gain + n / 1000, k + "_lo": lo, k + "_hi": hi,
                                      k + "_p": p} for n in ns}
    return {"paired": paired}


def _entries() -> list[dict[str, Any]]:
    return [{"ledger": _ledger(0, 360, 2000, 0.70, promote=True),
             "evaluation": _eval(-0.02, -0.06, 0.02, 0.41)},
            {"ledger": _ledger(1, 120, 2600, 0.75, promote=False, p=0.31, mde=0.066),
             "evaluation": _eval(0.05, 0.01, 0.09, 0.012, ns=(4, 8, 15))}]


def _write_dir(root: Path, entries: list[dict[str, Any]]) -> Path:
    (root / "ledger").mkdir(parents=True)
    for e in entries:
        r = e["ledger"]["round"]
        (root / "ledger" / f"round-{r:04d}.json").write_text(json.dumps(e["ledger"]))
        if e["evaluation"] is not None:
            (root / f"round-{r:04d}").mkdir()
            (root / f"round-{r:04d}" / "evaluation.json").write_text(json.dumps(e["evaluation"]))
    return root


def test_row_has_size_quality_gain_with_its_sign_and_the_gate() -> None:
    row = rep.round_row(_entries(), 0)
    assert row["rows"] == 2000 and row["rollouts"] == 360
    assert row["auc"] == pytest.approx(0.70) and row["pearson"] == pytest.approx(0.50)
    assert row["gain"] == pytest.approx(-0.02 + 0.004) and row["lo"] == -0.06
    assert row["decision"] == "promoted" and row["gate_p"] == 0.2 and row["mde"] == 0.07
    later = rep.round_row(_entries(), 1)
    assert later["rollouts"] == 480  # the dataset spans rounds 0 and 1: 360 + 120
    assert later["decision"] == "kept"


def test_table_renders_negative_gain_negative_and_rounds_in_order() -> None:
    entries = _entries()
    table = rep.rounds_table([rep.round_row(entries, i) for i in range(2)])
    lines = table.splitlines()
    assert lines[2].startswith("| 0 |") and lines[3].startswith("| 1 |")
    assert "-0.016 [-0.060, +0.020]" in lines[2] and "| 0.41 |" in lines[2]
    assert "+0.054 [+0.010, +0.090]" in lines[3] and "| 0.012 |" in lines[3]
    assert "kept (tested; Δ +0.010, p 0.31, mde 0.066)" in lines[3]
    assert "2000 / 360 (rounds 0)" in lines[2] and "2600 / 480 (rounds 0, 1)" in lines[3]


def test_folder_is_read_in_round_order_and_a_missing_evaluation_is_shown(tmp_path: Path
                                                                         ) -> None:
    entries = _entries()
    entries.append({"ledger": _ledger(2, 120, 3200, 0.78, status="open"), "evaluation": None})
    src = _write_dir(tmp_path / "rounds", list(reversed(entries)))
    got = rep.load_rounds(src)
    assert [e["ledger"]["round"] for e in got] == [0, 1, 2]
    text = "\n".join(rep.rounds_section(got, "Rounds", str(src), None))
    row2 = next(x for x in text.splitlines() if x.startswith("| 2 |"))
    assert "not evaluated" in row2 and "not decided (round open)" in row2
    assert "Round 1, every N" in text  # the last *evaluated* round's grid
    assert "| 15 | +0.065 [+0.010, +0.090] | 0.012 | 60 |" in text


def test_a_gap_in_the_rounds_is_an_error(tmp_path: Path) -> None:
    entries = _entries()
    entries[1]["ledger"]["round"] = 2
    with pytest.raises(ValueError, match=r"missing \[1\]"):
        rep.load_rounds(_write_dir(tmp_path / "rounds", entries))
    with pytest.raises(FileNotFoundError):
        rep.load_rounds(tmp_path / "nowhere")


def test_reading_calls_separable_only_with_interval_and_p() -> None:
    entries = _entries()
    text = "\n".join(rep.rounds_section(entries, "R", "src", None))
    assert "Round 1 (the last evaluated): AMC − Best-of-N +0.054, separable" in text
    assert "gain moved +0.070" in text and "promoted in rounds [0]" in text
    entries[1]["evaluation"] = _eval(0.05, 0.01, 0.09, 0.125)
    assert "+0.054, not separable" in "\n".join(rep.rounds_section(entries, "R", "s", None))


def test_results_doc_places_rounds_after_declared_and_regenerates_from_its_copy(
        tmp_path: Path) -> None:
    src = _write_dir(tmp_path / "rounds", _entries())
    out = tmp_path / "doc" / "results.md"
    write_results_doc(None, tmp_path, out, rounds=("Rounds on the prior", src))
    text = out.read_text()
    assert "## Rounds on the prior" in text and "![rounds](results-assets/rounds.png)" in text
    assets = out.parent / "results-assets"
    assert (assets / "rounds.png").stat().st_size > 0
    again = tmp_path / "doc2" / "results.md"
    write_results_doc(None, tmp_path, again, rounds=("Rounds on the prior", assets / "rounds.json"))
    table = [x for x in text.splitlines() if x.startswith("| ")]
    assert table == [x for x in again.read_text().splitlines() if x.startswith("| ")]


def test_no_round_yet(tmp_path: Path) -> None:
    (tmp_path / "rounds").mkdir()
    out = write_results_doc(None, tmp_path, tmp_path / "r.md",
                            rounds=("Rounds", tmp_path / "rounds"))
    assert rep.NO_ROUNDS in out.read_text()


def test_the_readme_sentence_reports_each_evaluated_round_and_claims_no_untested_change() -> None:
    entries = _entries()
    two = rep.rounds_sentence(entries)
    assert "2 round(s) closed [0, 1], 2 evaluated" in two
    assert "round 0: AMC − Best-of-4 -0.016 [-0.060, +0.020], exact p 0.41" in two
    assert "round 1: AMC − Best-of-4 +0.054 [+0.010, +0.090], exact p 0.012" in two
    assert "the gain moved +0.070" in two and "no improvement is claimed" in two
    entries[1]["evaluation"] = None
    entries[1]["ledger"]["status"] = "open"
    one = rep.rounds_sentence(entries)
    assert "1 round(s) closed [0], 1 evaluated" in one and "not measured yet" in one
    assert "moved" not in one


def _kept(folder: Path, spec: str, seed: int, values: dict[str, float]) -> None:
    """A kept results file: one record per task with its oracle_best."""
    import gzip

    folder.mkdir(parents=True, exist_ok=True)
    lines = "".join(json.dumps({"task_id": t, "seed": seed, "metrics": {"oracle_best": v}}) + "\n"
                    for t, v in values.items())
    (folder / f"{spec}__seed{seed}.jsonl.gz").write_bytes(gzip.compress(lines.encode()))


def _round_runs(root: Path, r: int, smc: dict[int, dict[str, float]],
                bon: dict[int, dict[str, float]]) -> None:
    for seed, v in smc.items():
        _kept(root / f"round-{r:04d}" / "eval", "smc@4+challenger", seed, v)
    for seed, v in bon.items():
        _kept(root / f"round-{r:04d}" / "eval", "bon@4", seed, v)


def test_rounds_are_paired_against_round_0_by_task_and_seed(tmp_path: Path) -> None:
    tasks = [f"t{i}" for i in range(8)]
    bon = {s: {t: 0.5 for t in tasks} for s in (0, 1)}
    # round 0: AMC = BoN; round 1: +1 on seed 0 of every task, 0 on seed 1 -> +0.5 per task;
    # round 1's Best-of-N differs (re-selected), so a mutant pairing AMC alone would read +0.6
    first = {s: {t: 0.5 for t in tasks} for s in (0, 1)}
    later = {0: {t: 1.5 for t in tasks}, 1: {t: 0.5 for t in tasks}}
    bon1 = {s: {t: 0.4 for t in tasks} for s in (0, 1)}
    later = {s: {t: v - 0.1 for t, v in later[s].items()} for s in later}
    src = _write_dir(tmp_path / "rounds", _entries())
    _round_runs(src, 0, first, bon)
    _round_runs(src, 1, later, bon1)
    got = rep.load_rounds(src)
    assert "versus_first" not in got[0]
    v = got[1]["versus_first"]
    assert v["mean"] == pytest.approx(0.5) and v["tasks"] == 8 and v["pairs"] == 16
    assert v["p"] == pytest.approx(2 / 2 ** 8) and v["separates"]  # all 8 tasks one sign
    text = "\n".join(rep.rounds_section(got, "R", str(src), None))
    assert "+0.500 [+0.500, +0.500], p 0.00781 (8 tasks)" in text
    assert "the rounds improved the gain" in rep.rounds_sentence(got)
    # half the tasks better, half worse: paired, not separable, nothing claimed
    mixed = {s: {t: (1.0 if i % 2 else 0.0) for i, t in enumerate(tasks)} for s in (0, 1)}
    _round_runs(src, 1, mixed, bon)
    again = rep.load_rounds(src)
    assert again[1]["versus_first"]["mean"] == pytest.approx(0.0)
    assert "not separable: no improvement shown" in rep.rounds_sentence(again)


def test_a_restore_is_read_from_the_ledger_and_says_which_runs_used_which_weights(
        tmp_path: Path) -> None:
    src = _write_dir(tmp_path / "rounds", _entries())
    restores = [{"round": 0, "restored_at": "2026-12-03T18:50:00Z", "tol": 0.01,
                 "max_difference": 0.0042, "kept_before": {
                     "round-0000/eval/smc@4+challenger__seed0.jsonl.gz": 60,
                     "round-0000/eval/smc@4+challenger__seed2.jsonl.gz": 6,
                     "gate-eval/smc@4+challenger__seed0.jsonl.gz": 30}}]
    (src / "ledger" / "restores.jsonl").write_text("".join(json.dumps(x) + "\n" for x in restores))
    got = rep.load_rounds(src)
    assert got[0]["restores"] == restores and "restores" not in got[1]
    text = "\n".join(rep.rounds_section(got, "Rounds", str(src), None))
    line = next(x for x in text.splitlines() if "restore (" in x)
    assert line.startswith("- Round 0's value") and "difference 0.0042 (tolerance 0.01)" in line
    assert "the 66 declared-set results kept before it" in line  # not the gate's 30


def test_the_last_rounds_full_grid_is_its_kept_runs() -> None:
    """The committed last round evaluated every N of the grid on the declared 60 tasks x 3
    seeds, and each paired AMC - Best-of-N (oracle best-of-pool) is what its kept
    trajectories give (paired by task and seed, averaged within task, t over tasks)."""
    import gzip

    from amc.stats import paired_difference

    root = Path(__file__).resolve().parents[3] / "evidence/llm-regime/rounds"
    last = sorted(root.glob("round-*/evaluation.json"))[-1]
    ev = json.loads(last.read_text())

    def runs(spec: str) -> dict[tuple[str, int], float]:
        out = {}
        for seed in ev["seeds"]:
            with gzip.open(last.parent / "eval" / f"{spec}__seed{seed}.jsonl.gz", "rt") as fh:
                for line in fh:
                    r = json.loads(line)
                    out.setdefault((str(r["task_id"]), seed), float(r["metrics"]["oracle_best"]))
        return out

    for n in (4, 8, 15):
        amc, bon = runs(f"smc@{n}+challenger"), runs(f"bon@{n}")
        assert len(amc) == len(bon) == 60 * 3 and set(amc) == set(bon)
        got = paired_difference(amc, bon)
        row = ev["paired"][f"smc@{n}+challenger"]
        assert row["baseline"] == f"bon@{n}" and got.tasks == 60
        assert row["oracle_best"] == pytest.approx(got.mean)
        assert row["oracle_best_p"] == pytest.approx(got.p)
