"""The declared WebShop/SciWorld cells and the validation choice rule, on hand-built records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from studies.sweeps.benchdoc import cell_seconds
from studies.sweeps.cell import cell_name
from studies.sweeps.config import CellParams
from studies.sweeps.grid import (
    CEILINGS,
    GRIDS,
    best_regime,
    candidates,
    ceiling_record,
    choose,
    chosen_test_cells,
    main,
    overrides,
)

REPO = Path(__file__).resolve().parents[3]


def record(q: float, n: int, beta: float, value: str, gain: list[float],
           split: str = "validation", **extra) -> dict:
    c = {**GRIDS["webshop"].base, "split": split, "q": q, "n": n, "beta": beta, "value": value,
         **extra}
    rows = [{"task_id": str(i), "seed": 0, "bon": {"metrics": {"oracle_best": 0.5}},
             "amc": {"metrics": {"oracle_best": 0.5 + g}}} for i, g in enumerate(gain)]
    return {"cell": c, "rows": rows}


def test_the_validation_grid_is_declared_and_every_cell_is_a_valid_cell():
    cells = candidates("webshop")
    assert len(cells) == 3 * 2 * 4 + 3 * 2 + 2 * 4  # rollout: q x N x beta; none: one beta;
    # learned (declared after the rollout and none cells ran): q = 0.3 only, N x beta
    assert all(c["split"] == "validation" and c["budget"] == 6 for c in cells)
    assert len({tuple(sorted((k, str(v)) for k, v in c.items())) for c in cells}) == len(cells)
    for c in cells:
        CellParams.model_validate(c)  # every override is a key of the cell


def test_choose_takes_the_largest_validation_gain_per_setting_ties_to_the_larger_beta():
    runs = [record(0.4, 4, 0.05, "rollout", [0.1, 0.2]),
            record(0.4, 4, 0.1, "rollout", [0.3, 0.3]),
            record(0.4, 4, 0.25, "rollout", [0.3, 0.3]),
            record(0.3, 4, 0.05, "rollout", [0.0, 0.1]),
            record(0.4, 4, 0.5, "rollout", [0.9, 0.9], split="test"),  # test never chooses
            record(0.4, 4, 0.5, "rollout", [0.9, 0.9], budget=9),  # another base: not ours
            record(0.4, 4, 0.5, "rollout", [0.9, 0.9], benchmark="textcraft"),
            record(0.4, 4, 0.5, "rollout", [0.0, 0.0]),
            record(0.3, 4, 0.1, "rollout", [0.0, 0.0]), record(0.3, 4, 0.25, "rollout", [0.0, 0.0]),
            record(0.3, 4, 0.5, "rollout", [-0.1, 0.0]),
            record(0.6, 4, 0.05, "rollout", [0.5, 0.5]),  # 1 of 4 betas run: not chosen yet
            record(0.4, 4, 0.1, "none", [0.0, 0.0])]
    chosen = {(r["cell"]["q"], r["cell"]["value"]): r["cell"]["beta"]
              for r in choose(runs, "webshop")}
    assert chosen == {(0.4, "rollout"): 0.25, (0.3, "rollout"): 0.05, (0.4, "none"): 0.1}
    tests = chosen_test_cells(runs, "webshop")
    assert {(c["q"], c["beta"], c["split"]) for c in tests} == {
        (0.3, 0.05, "test"), (0.4, 0.25, "test"), (0.4, 0.1, "test")}
    assert all(c["seeds"] == [0, 1, 2, 3, 4, 5] for c in tests)
    best = best_regime(runs, "webshop", "rollout")
    assert best is not None and (best["cell"]["q"], best["cell"]["beta"]) == (0.4, 0.25)
    assert best_regime(runs, "webshop", "learned") is None


def test_overrides_and_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    s = overrides({"q": 0.4, "seeds": [0, 1], "benchmark": "webshop"})
    assert s == "-S 'cell.q=0.4' -S 'cell.seeds=[0, 1]' -S 'cell.benchmark=webshop'"
    assert main(["validation", "webshop"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == len(candidates("webshop"))
    (tmp_path / "runs").mkdir()
    assert main(["test", "webshop", "--runs", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith("error: no webshop validation records")


def test_the_sciworld_ceiling_cells_are_declared_and_sized_from_the_measured_cost(
        capsys: pytest.CaptureFixture[str]):
    """Committed data: the measured rollout-value pairs cover the cells' test games at the
    grid's base, and the ceiling cells at the measured skills (q 0.6 and 0.8, declared first)
    fit in 90 minutes at those figures (q 0.3's, declared later, is not measured)."""
    cells = CEILINGS["sciworld"]
    g = GRIDS["sciworld"]
    assert {(c["q"], c["n"]) for c in cells} == {(q, 4) for q in g.q} | {(0.3, 8)}
    assert len(cells) == len(g.q) + 1  # + q 0.3 at N = 8 (declared with the N = 8 settings)
    for c in cells:
        CellParams.model_validate(c)
        assert (c["split"], c["value"], c["beta"]) == ("test", "rollout", 0.1)
        assert {k: c[k] for k in g.base} == g.base  # the none cells' base: same tasks, M
    cost = json.loads((REPO / "evidence" / "sciworld_rollout_cost.json").read_text())
    games = json.loads((REPO / "sweeps" / g.base["task_file"]).read_text())["test"]
    for run in cost["runs"]:
        assert sorted(int(p["task_id"]) for p in run["pairs"]) == sorted(games)
        assert (run["n"], run["rollouts"], run["budget"], run["every"]) == (
            4, g.base["rollouts"], g.base["budget"], g.base["every"])
    measured = [c for c in cells if c["q"] in {r["q"] for r in cost["runs"]} and c["n"] == 4]
    assert {c["q"] for c in measured} == {0.6, 0.8}
    assert sum(cell_seconds(cost, c) for c in measured) <= 90 * 60
    assert main(["ceiling", "sciworld"]) == 0
    assert capsys.readouterr().out.splitlines() == [overrides(c) for c in cells]


def test_a_ceiling_record_is_the_declared_cell_at_its_q_and_n():
    c = dict(CEILINGS["sciworld"][0])
    rec = {"cell": c, "rows": []}
    other = {"cell": {**c, "beta": 0.5}, "rows": []}  # not the declared beta
    assert ceiling_record([other, rec], "sciworld", c["q"], 4) is rec
    assert ceiling_record([other], "sciworld", c["q"], 4) is None
    assert ceiling_record([rec], "sciworld", c["q"], 8) is None
    assert ceiling_record([rec], "webshop", c["q"], 4) is None


def test_the_learned_webshop_cells_read_the_webshop_value(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]):
    learned = [c for c in candidates("webshop") if c["value"] == "learned"]
    assert {(c["q"], c["n"], c["beta"]) for c in learned} == {
        (0.3, n, b) for n in (4, 8) for b in (0.05, 0.1, 0.25, 0.5)}
    assert all(c["value_model"] == "models/value-webshop" and c["val_sample"] == "random"
               for c in learned)
    assert all("value_model" not in c for c in candidates("webshop") if c["value"] != "learned")
    # the chosen learned setting's test twin keeps the value's keys
    runs = [record(0.3, 8, b, "learned", [g, g], value_model="models/value-webshop",
                   val_sample="random") for b, g in ((0.05, 0.1), (0.1, 0.3), (0.25, 0.0),
                                                     (0.5, 0.0))]
    (test,) = chosen_test_cells(runs, "webshop")
    assert (test["beta"], test["value_model"], test["split"]) == (0.1, "models/value-webshop",
                                                                  "test")
    # skip-done: a learned cell whose record exists is left out of the listing
    from studies.sweeps.cell import cell_name

    (tmp_path / "runs").mkdir()
    done = cell_name(CellParams.model_validate(learned[0]))
    (tmp_path / "runs" / f"{done}.json").write_text("{}")
    assert main(["validation", "webshop", "--runs", str(tmp_path), "--skip-done"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == len(candidates("webshop")) - 1 and overrides(learned[0]) not in out
    assert overrides(learned[1]) in out and "cell.value_model=models/value-webshop" in out[-1]
    # a retrained value: the record ran with another model, so its cell is listed again
    from studies.sweeps.grid import done_names

    rec = {"cell": {"value": "learned"}, "value_model_hash": "old"}
    (tmp_path / "runs" / f"{done}.json").write_text(json.dumps(rec))
    quality = tmp_path / "q.json"
    assert done in done_names(tmp_path / "runs", quality)  # no current value known
    quality.write_text(json.dumps({"model_hash": "old"}))
    assert done in done_names(tmp_path / "runs", quality)
    quality.write_text(json.dumps({"model_hash": "new"}))
    assert done not in done_names(tmp_path / "runs", quality)
    (tmp_path / "runs" / "none-cell.json").write_text(json.dumps({"cell": {"value": "none"}}))
    assert "none-cell" in done_names(tmp_path / "runs", quality)  # value-free cells stay done


def test_the_webshop_forced_buy_ceilings_are_new_cells_at_the_rollout_value_s_choice():
    """Declared at the learned cells' q, each N, the beta the rule chose for the rollout value
    there (from the committed validation records), with the buy: names of their own (-ff)."""
    runs = [json.loads(p.read_text()) for p in (REPO / "evidence" / "runs").glob("*.json")]
    chosen = {(r["cell"]["q"], r["cell"]["n"]): r["cell"]["beta"] for r in choose(runs, "webshop")
              if r["cell"]["value"] == "rollout"}
    cells = CEILINGS["webshop"]
    assert {c["n"] for c in cells} == set(GRIDS["webshop"].n)
    for c in cells:
        p = CellParams.model_validate(c)
        assert (p.split, p.value, p.rollout_final) == ("test", "rollout", True)
        assert (p.q,) == GRIDS["webshop"].value_q["learned"]
        assert p.beta == chosen[(p.q, p.n)]
        assert cell_name(p).endswith("-ff")


def test_sciworld_s_later_settings_add_their_cells_and_the_rule_reads_their_betas():
    """The extension (declared 2026-12-04): q 0.3 gets N = 8 for both values and three betas
    for the learned value; the first settings keep their one beta; a record at an undeclared
    beta or setting never enters the choice."""
    cells = candidates("sciworld")
    got = {(c["value"], c["q"], c["n"], c["beta"]) for c in cells}
    assert len(got) == len(cells) == 2 + 3 + 3 + 1 + 3 + 3  # none: q 0.6, 0.8 at N 4, q 0.3
    # at N 4 and 8 x 3 betas; learned: q 0.3 at N 4 and 8 x 3 betas, q 0.6 at N 4
    assert {("learned", 0.3, n, b) for n in (4, 8) for b in (0.05, 0.1, 0.25)} <= got
    assert ("learned", 0.6, 4, 0.1) in got and ("learned", 0.6, 8, 0.1) not in got
    assert {("none", 0.3, n, b) for n in (4, 8) for b in (0.05, 0.1, 0.25)} <= got
    assert ("none", 0.6, 8, 0.1) not in got and ("none", 0.6, 4, 0.05) not in got
    base = {**GRIDS["sciworld"].base, "value_model": "models/value-sciworld"}

    def rec(n: int, beta: float, g: float) -> dict:
        return {"cell": {**base, "split": "validation", "seeds": [0], "q": 0.3, "n": n,
                         "beta": beta, "value": "learned"},
                "rows": [{"task_id": str(i), "seed": 0, "bon": {"metrics": {"oracle_best": 0.5}},
                          "amc": {"metrics": {"oracle_best": 0.5 + g}}} for i in range(3)]}

    runs = [rec(4, 0.1, 0.1), rec(4, 0.05, 0.2)]
    assert choose(runs, "sciworld") == []  # 0.25 not run yet: no choice at (0.3, 4)
    runs += [rec(4, 0.25, 0.0), rec(4, 0.5, 0.9)]  # 0.5: not declared, never chosen
    (best,) = choose(runs, "sciworld")
    assert (best["cell"]["n"], best["cell"]["beta"]) == (4, 0.05)
    assert choose([rec(16, 0.1, 0.9)], "sciworld") == []  # N = 16: not declared


def test_the_test_listing_chooses_among_the_current_value_s_validation_cells(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch):
    """A retrained value: the superseded value's better validation cell must not pick the new
    value's test cell; a harvested id with a calibration suffix still counts as current."""
    from studies.sweeps.grid import is_current

    def rec(beta: float, gain: float, h: str) -> dict:
        return {**record(0.3, 4, beta, "learned", [gain, gain], value_model="models/value-webshop",
                         val_sample="random"), "value_model_hash": h}

    (tmp_path / "ev" / "runs").mkdir(parents=True)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "value_quality_webshop.json").write_text(json.dumps({"model_hash": "new"}))
    for i, (b, g, h) in enumerate([(0.05, 0.9, "old"), (0.05, 0.1, "new"), (0.1, 0.3, "new"),
                                   (0.25, 0.0, "new"), (0.5, 0.0, "new")]):
        (tmp_path / "ev" / "runs" / f"r{i}.json").write_text(json.dumps(rec(b, g, h)))
    monkeypatch.chdir(tmp_path)
    assert main(["test", "webshop", "--runs", "ev"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert "-S 'cell.beta=0.1'" in line and "-S 'cell.split=test'" in line
    assert is_current({"cell": {"value": "learned"}, "value_model_hash": "new-isotonic-ab"}, "new")
    assert not is_current({"cell": {"value": "learned"}, "value_model_hash": "old"}, "new")
    assert is_current({"cell": {"value": "none"}}, "new") and is_current({"cell": {}}, None)
