"""The per-benchmark sections of the evidence document, on hand-built WebShop records."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from studies.sweeps.benchdoc import summary_section, webshop_section
from studies.sweeps.config import CellParams
from studies.sweeps.evidence import render
from studies.sweeps.grid import GRIDS
from studies.sweeps.select import compare
from tests.studies.sweeps.test_evidence import record as textcraft_record


def web(gain: float, split: str, seed: int = 0, tasks: int = 12, **kw) -> dict:
    """A WebShop record: graded scores, AMC ``gain`` higher; mode selections lose 0.2."""
    c = CellParams(**{**GRIDS["webshop"].base, "split": split, **kw}).model_dump(mode="json")
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(tasks):
        b = float(rng.uniform(0.3, 0.7))
        a = b + gain + float(rng.normal(0, 0.02))

        def m(x: float) -> dict:
            return {"oracle_best": x, "success": float(x > 0.9), "mode_reward": x - 0.2,
                    "max_weight_masked_reward": x - 0.3, "deployable_reward": float("nan")}

        rows.append({"task_id": str(t), "seed": 0, "bon": {"metrics": m(b), "calls": 10},
                     "amc": {"metrics": m(a), "calls": 50}})
    return {"name": f"{split}-{kw}", "cell": c, "summary": {}, "rows": rows}


def validation(q: float = 0.4) -> list[dict]:
    """Every declared beta of one (q, N = 4, rollout) setting; beta = 0.25 gains most."""
    gains = {0.05: 0.05, 0.1: 0.05, 0.25: 0.2, 0.5: 0.0}
    return [web(g, "validation", q=q, beta=b) for b, g in gains.items()]


def test_the_summary_reports_the_validation_choice_on_its_test_cell():
    runs = [*validation(), web(0.01, "validation", q=0.4, beta=0.1, value="none"),
            web(0.9, "validation", q=0.6, beta=0.1),  # 1 of 4 betas: no choice yet
            web(0.15, "test", seed=1, q=0.4, beta=0.25), web(0.9, "test", q=0.4, beta=0.1)]
    text = summary_section(runs, None)
    (row,) = [ln for ln in text.splitlines() if ln.startswith("| webshop") and "rollout" in ln]
    assert "β = 0.25" in row  # chosen on validation, not the better test cell (β = 0.1)
    assert f"{compare(runs[-2]).d.mean:+.3f}" in row and "(most likely)" in row
    assert "0.200 / 0.200" in row  # mode loss AMC / BoN
    (none,) = [ln for ln in text.splitlines() if ln.startswith("| webshop") and "none" in ln]
    assert "test cell not run yet" in none
    assert "SciWorld: no cell run yet" in text
    assert "webshop: 6 of 38 declared validation cells run" in text


def test_the_webshop_section_marks_the_chosen_cells_and_the_hidden_selection_losses():
    runs = [*validation(), web(0.15, "test", q=0.4, beta=0.25)]
    text = webshop_section(runs)
    chosen = [ln for ln in text.splitlines() if ln.startswith("| validation ✓")]
    assert len(chosen) == 1 and "β = 0.25" in chosen[0]
    hidden = [ln for ln in text.splitlines() if ln.startswith("| test:")]
    assert {ln.split(" | ")[1] for ln in hidden} == {"max-weight, rewards masked",
                                                     "most likely trajectory"}
    assert webshop_section([textcraft_record(0.1)]) == ""


def test_textcraft_tables_ignore_other_benchmarks_and_the_summary_comes_first():
    tc = [textcraft_record(0.2, value="learned", beta=0.05), textcraft_record(0.3, beta=0.05)]
    alone = render(tc, None, None, "evidence")
    both = render([*tc, web(0.2, "validation", beta=0.25)], None, None, "evidence")
    assert "## WebShop" in both and "## WebShop" not in alone
    head = both.index("## Per-benchmark summary")
    assert head < both.index("## Goal") and "| textcraft |" in both
    assert "## TextCraft: success is observable" in both


def test_sciworld_pairs_are_sized_from_the_measured_step_cost():
    from studies.sweeps.benchdoc import pair_seconds, sciworld_cost_sentence

    cost = {"menu": [1.0, 2.0, 3.0], "step": [0.1], "fork": [4.0, 5.0], "conditions": "idle",
            "pool_size": 2, "menu_len": 300, "gold_s_per_task": 1.5}
    # 2 methods x 4 particles x 10 steps x (2 + 0.1) s + 4 resamplings x 2 forks x 5 s
    assert pair_seconds(cost, 4, 10, 2) == pytest.approx(168 + 40)
    text = sciworld_cost_sentence(cost)
    assert "action menu 2.00 s" in text and "costs about 208 s" in text
    assert sciworld_cost_sentence(None) == ""


def test_the_readme_sentence_reports_the_validation_choice_or_its_absence():
    from studies.sweeps.benchdoc import bench_sentence

    val = validation()
    assert "no regime chosen yet (0 of" in bench_sentence([], "webshop")
    pending = bench_sentence(val, "webshop")
    assert "β = 0.25" in pending and "its test cell has not run" in pending  # the rule's pick
    test = web(0.2, "test", beta=0.25)
    done = bench_sentence([*val, test], "webshop")
    p = compare(test)
    tasks = len({r["task_id"] for r in test["rows"]})
    seeds = len({r["seed"] for r in test["rows"]})
    assert tasks * seeds == len(test["rows"]) == 12 and tasks > 1
    # counted in tasks (the interval is over tasks), not (task, seed) pairs
    assert f"{p.d.mean:+.3f} [{p.d.lo:+.3f}, {p.d.hi:+.3f}]" in done
    assert f"over {tasks} tasks × {seeds} seeds" in done and "pairs" not in done


def test_webshop_gets_its_gain_plot(tmp_path):
    from studies.sweeps.benchdoc import bench_sections

    recs = [*validation(), web(0.2, "test", beta=0.25)]
    web_part = bench_sections(recs, tmp_path, "ev")[0]
    assert "![WebShop gain vs beta](ev/webshop_gain_vs_beta.png)" in web_part
    png = tmp_path / "webshop_gain_vs_beta.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    again = png.read_bytes()
    bench_sections(recs, tmp_path, "ev")
    assert png.read_bytes() == again  # reproducible: a regenerated document changes nothing
    assert "webshop_gain" not in bench_sections([web(0.2, "test", value="none")], None)[0]


def sci(gain: float, split: str, value: str, q: float = 0.6, beta: float = 0.1, **kw) -> dict:
    """A SciWorld record (the grid's base) with AMC ``gain`` above Best-of-N on every task."""
    base = GRIDS["sciworld"].base
    c = CellParams(**{**base, "split": split, "q": q, "beta": beta, "value": value,
                      "n": 4, **kw}).model_dump(mode="json")
    rows = [{"task_id": str(t), "seed": 0,
             "bon": {"metrics": {"oracle_best": 0.5}, "calls": 10},
             "amc": {"metrics": {"oracle_best": 0.5 + gain + 0.01 * t}, "calls": 50}}
            for t in range(6)]
    return {"name": f"{split}-{value}", "cell": c, "summary": {}, "rows": rows}


def test_sciworld_ceiling_column_reads_the_declared_ceiling_cell():
    from studies.sweeps.grid import CEILINGS

    runs = [sci(0.0, "validation", "none"), sci(0.02, "test", "none"),
            sci(0.3, "test", "rollout", beta=0.5)]  # not the declared ceiling cell (beta)
    (row,) = [ln for ln in summary_section(runs, None).splitlines()
              if ln.startswith("| sciworld")]
    assert row.split(" | ")[7] == "–"  # no ceiling yet
    declared = next(c for c in CEILINGS["sciworld"] if c["q"] == 0.6)
    ceiling = sci(0.2, **declared)
    (row,) = [ln for ln in summary_section([*runs, ceiling], None).splitlines()
              if ln.startswith("| sciworld")]
    assert row.split(" | ")[7].startswith(f"{compare(ceiling).d.mean:+.3f}")


def test_sciworld_rollout_cost_sentence_reads_the_measured_pairs():
    from studies.sweeps.benchdoc import cell_seconds, rollout_cost_sentence
    from studies.sweeps.grid import CEILINGS

    def run(q: float, scale: float) -> dict:
        pairs = [{"task_id": str(t), "bon": {"wall_s": 2.0, "calls": 40, "oracle_best": t / 2},
                  "amc": {"wall_s": w * scale, "calls": 40 * k}} for t, w, k in
                 ((1, 10.0, 5), (2, 30.0, 8), (3, 20.0, 6))]
        return {"conditions": "idle", "q": q, "n": 4, "rollouts": 4, "budget": 10,
                "every": 2, "pairs": pairs}

    rollout = {"runs": [run(0.6, 1.0), run(0.8, 0.5)]}
    assert cell_seconds(rollout, {"q": 0.6, "seeds": [0, 1]}) == pytest.approx(2 * (6 + 60))
    assert cell_seconds(rollout, {"q": 0.8, "seeds": [0]}) == pytest.approx(6 + 30)
    with pytest.raises(ValueError, match=r"q = 0\.4"):
        cell_seconds(rollout, {"q": 0.4, "seeds": [0]})
    text = rollout_cost_sentence({"rollout": rollout})
    assert "at q = 0.6 (idle; 3 test games, one seed) AMC with the rollout value takes 20 s" in text
    assert "(median; 10–30 s), Best-of-N 2 s, with 5.0–8.0× Best-of-N's prior calls" in text
    assert "best-of-pool score is 1 in 2 of 3 of these pairs" in text  # t / 2 >= 1: t = 2, 3
    assert "at q = 0.8 (idle; 3 test games, one seed) AMC with the rollout value takes 10 s" in text
    sized = [c for c in CEILINGS["sciworld"] if c["q"] in (0.6, 0.8)]
    minutes = sum(cell_seconds(rollout, c) for c in sized) / 60
    assert "ceiling cells at q = 0.6, 0.8 (every test game" in text
    assert (f"come to about {minutes:.0f} min at these figures; those at q = 0.3 (N = 4), "
            "q = 0.3 (N = 8) are not sized") in text
    one = rollout_cost_sentence({"rollout": {"runs": [run(0.6, 1.0)]}})
    assert "the 1 declared ceiling cells at q = 0.6 " in one
    assert "q = 0.3 (N = 4), q = 0.8 (N = 4), q = 0.3 (N = 8) are not sized" in one
    assert "not measured yet" in rollout_cost_sentence({})


def test_the_webshop_section_says_which_validation_cells_ran_on_the_id_tail():
    from studies.sweeps.benchdoc import validation_sample_note

    recs = validation()  # every beta on the seeded random sample
    assert "seeded random sample" in validation_sample_note(recs)
    assert "tail" not in validation_sample_note(recs)
    for r in recs[:2]:  # two records from before val_sample existed: the id tail
        del r["cell"]["val_sample"]
    note = validation_sample_note(recs)
    assert note.startswith("Validation goals: 2 of the 4 validation cells")
    assert "q = 0.4, N = 4, rollout upper bound (β 0.05, 0.1 on the tail, 0.25, 0.5 on" in note
    lines = webshop_section(recs).splitlines()
    assert sum(ln.startswith("| validation (tail)") for ln in lines) == 2


def test_the_webshop_section_shows_the_learned_value_s_held_out_quality():
    from studies.sweeps.benchdoc import bench_sections

    learned = web(0.1, "validation", q=0.3, beta=0.1, value="learned",
                  value_model="models/value-webshop")
    learned["value_model_hash"] = "abc"
    quality = {"final": {"test_pearson": 0.534, "test_auc": 0.674, "test_auc_within": 0.679},
               "ceiling": {"states": 364.0, "rollouts": 8.0, "pearson": 0.367, "auc": 0.71,
                           "auc_within": 0.714},
               "data": {"q_grid": [0.3, 0.6], "splits": {"train": {"rows": 1575, "tasks": 17}}}}
    runs = [*validation(), learned]
    assert "Learned V_θ" not in bench_sections(validation(), values={"abc": quality})[0]
    text = bench_sections(runs, values={"abc": quality})[0]
    assert ("Learned V_θ `abc` (stage value_webshop: 1575 training states of 17 train goals "
            "outside validation, planner-mix q ∈ {0.3, 0.6}") in text
    assert "on 364 held-out states Pearson 0.534, AUC 0.674" in text
    assert "(M = 8) Pearson 0.367, AUC 0.710, within 0.714" in text
    assert "no quality record" in bench_sections(runs, values={})[0]


def test_sciworld_s_learned_value_gets_its_own_paragraph_without_a_ceiling(tmp_path: Path):
    from studies.sweeps.benchdoc import bench_sections

    rec = sci(0.1, "test", "learned")
    rec["value_model_hash"] = "def"
    quality = {"final": {"test_pearson": 0.41, "test_auc": 0.7, "test_auc_within": 0.62},
               "ceiling": None, "held_out": "test",
               "data": {"q_grid": [0.6], "splits": {"train": {"rows": 900, "tasks": 15},
                                                    "test": {"rows": 212}}}}
    runs = [rec, sci(0.0, "test", "none", q=0.3), sci(0.2, "test", "rollout", q=0.3)]
    parts = bench_sections(runs, tmp_path, "ev", values={"def": quality})
    assert (tmp_path / "sciworld_gain_vs_q.png").stat().st_size > 0  # every value, two q
    sci_part = next(x for x in parts if "## SciWorld" in x)
    assert "stage value_sciworld: 900 training states of 15 train games" in sci_part
    assert "on 212 held-out states Pearson 0.410, AUC 0.700, AUC within (game, step) 0.620" \
        in sci_part
    assert "no rollout ceiling" in sci_part and "(M = " not in sci_part
    assert "sciworld_gain_vs_q.png" in sci_part
    assert not any("## SciWorld" in x for x in bench_sections([], values={}))


def test_the_webshop_section_says_which_rollout_cells_stop_before_the_forced_buy():
    from studies.sweeps.benchdoc import rollout_final_note

    old = {"cell": {"value": "rollout", "benchmark": "webshop"}}  # recorded before the key
    new = {"cell": {"value": "rollout", "benchmark": "webshop", "rollout_final": True}}
    none = {"cell": {"value": "none", "benchmark": "webshop"}}
    assert "2 of the 2 rollout-value cells" in rollout_final_note([old, old, none])
    assert "no cell with the buy" in rollout_final_note([old, old])
    mixed = rollout_final_note([old, new, none])
    assert "1 of the 2 rollout-value cells" in mixed and "1 ran with it" in mixed
    assert "Every one of the 1 rollout-value cells" in rollout_final_note([new])
    assert rollout_final_note([none]) == ""


def test_the_learned_row_s_ceiling_is_the_declared_forced_buy_cell_once_it_ran(tmp_path):
    """Before the ``-ff`` ceiling runs, the learned row reads the rollout twin without the buy;
    after, the declared cell (not the twin), and the rollout row keeps its own twin."""
    from studies.sweeps.grid import CEILINGS

    old = {"rollout_final": False}  # the rollout cells as they ran
    runs = [*(web(g, "validation", q=0.3, n=4, beta=b, value="rollout", **old)
              for b, g in {0.05: 0.0, 0.1: 0.1, 0.25: 0.0, 0.5: 0.0}.items()),
            *(web(0.05 if b == 0.1 else 0.0, "validation", q=0.3, n=4, beta=b,
                  value="learned", value_model="models/value-webshop") for b in GRIDS[
                      "webshop"].beta),
            web(0.04, "test", q=0.3, n=4, beta=0.1, value="learned",
                value_model="models/value-webshop"),
            web(0.1, "test", seed=1, q=0.3, n=4, beta=0.1, value="rollout", **old)]

    def ceiling(rs: list[dict], value: str) -> str:
        (row,) = [ln for ln in summary_section(rs, None).splitlines()
                  if ln.startswith("| webshop") and f"| {value} |" in ln]
        return row.split(" | ")[7]

    twin = compare(runs[-1]).d.mean
    assert ceiling(runs, "learned V_θ").startswith(f"{twin:+.3f}")
    (declared,) = [c for c in CEILINGS["webshop"] if c["n"] == 4]
    ff = web(0.3, "test", seed=2, **{k: v for k, v in declared.items()
                                     if k not in GRIDS["webshop"].base and k != "split"})
    assert ff["cell"]["rollout_final"] is True
    with_ff = [*runs, ff]
    assert ceiling(with_ff, "learned V_θ").startswith(f"{compare(ff).d.mean:+.3f}")
    assert ceiling(with_ff, "rollout upper bound").startswith(f"{twin:+.3f}")
    assert "(rollouts end with the forced buy)" in webshop_section(with_ff)
    from studies.sweeps.benchdoc import bench_sections

    bench_sections(with_ff, tmp_path, "ev")  # two test cells at one (q, N, beta) in one plot
    assert (tmp_path / "webshop_gain_vs_beta.png").stat().st_size > 0


def test_cells_of_an_earlier_sciworld_value_are_kept_apart_and_listed():
    from studies.sweeps.bench_values import split_current
    from studies.sweeps.benchdoc import bench_sections

    def rec(h: str, value: str = "learned") -> dict:
        return {"name": f"sci-{h}-{value}", "value_model_hash": h, "rows": [],
                "cell": {"benchmark": "sciworld", "value": value, "split": "test", "q": 0.6,
                         "n": 4}}

    runs = [rec("old"), rec("new"), rec("old", "none"), web(0.1, "test", value="learned")]
    keep, old = split_current(runs, {"sciworld": "new"})
    assert [r["name"] for r in old] == ["sci-old-learned"]  # value-free cells stay
    assert len(keep) == 3 and runs[3] in keep  # no WebShop entry: nothing set apart there
    keep, old = split_current(runs, {})
    assert not old
    parts = bench_sections([sci(0.0, "test", "none")], values={}, superseded=[rec("old")])
    part = next(x for x in parts if "## SciWorld" in x)
    assert "Superseded" in part and "`old` test q = 0.6, N = 4" in part


def test_a_regime_that_does_not_gain_on_test_gets_its_measured_reason():
    """No value at q 0.4 (not separable on test) beside a separable rollout ceiling there: the
    note gives Best-of-N's room and the ceiling; a separable regime gets no sentence."""
    from studies.sweeps.benchdoc import no_gain_note

    runs = [*validation(0.4), web(0.2, "test", q=0.4, beta=0.25, seed=1),
            web(0.0, "validation", q=0.4, beta=0.1, value="none"),
            web(0.0, "test", q=0.4, beta=0.1, value="none", seed=2)]
    note = no_gain_note(runs, "webshop")
    none = compare(runs[-1])
    ceiling = compare(runs[4])
    assert note.startswith("\nWebShop, where AMC does not gain on test")
    assert f"with no value {none.d.mean:+.3f} [" in note
    assert f"Best-of-N already scores {none.a:.3f} of at most 1 (room {1 - none.a:.3f})" in note
    assert f"gains {ceiling.d.mean:+.3f} [" in note and "resampling reads only the rewards" in note
    assert note.count("with ") == 1  # the rollout value's own regime is separable: no part
    assert no_gain_note(runs[:5], "webshop") == ""  # only the separable ceiling's regime
