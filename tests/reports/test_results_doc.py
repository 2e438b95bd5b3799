"""docs/results.md is generated from metrics: tables, copied plots and a computed reading."""

import json

from amc.reports.results_doc import reading, write_results_doc


def _m(role, n, sel, se, oracle=None, success=0.5):
    return {"role": role, "n": n, "tasks": 20, "runs": 40, "deployable_reward": sel,
            "deployable_reward_se": se, "max_weight_reward": sel, "max_weight_reward_se": se,
            "oracle_best": sel if oracle is None else oracle,
            "oracle_best_se": se, "weighted_mean_reward": sel, "weighted_mean_reward_se": se,
            "success": success, "success_se": 0.05, "tokens_per_task": 1000.0,
            "cost_per_task": 0.01}


def test_reading_calls_wins_only_beyond_two_standard_errors():
    methods = {"react": _m("react", 1, 0.2, 0.05), "bon@8": _m("bon", 8, 0.50, 0.02),
               "smc@8+learned": _m("amc", 8, 0.62, 0.02), "smc@8+zs": _m("smc", 8, 0.60, 0.03),
               "bon@15": _m("bon", 15, 0.55, 0.02), "smc@15+learned": _m("amc", 15, 0.56, 0.02)}
    text = "\n".join(reading(methods))
    assert "N = 8, deployable (value-selected): `smc@8+learned` − `bon@8` = +0.120 → better" \
        in text
    assert "N = 15, deployable (value-selected): `smc@15+learned` − `bon@15` = +0.010 → not " \
           "separable" in text
    assert "learned vs other value (`smc@8+zs`), deployable: +0.020 → not separable" in text
    assert "Scaling: `smc@8+learned` vs Best-of-15, oracle: +0.070 → better" in text
    assert "No method solved" not in text
    assert "Ceiling" not in text
    paired = {"smc@8+learned": {"method": "smc@8+learned", "baseline": "bon@8", "runs": 40,
                                "tasks": 20, "deployable_reward": 0.05,
                                "deployable_reward_se": 0.01, "deployable_reward_lo": 0.03,
                                "deployable_reward_hi": 0.07, "deployable_reward_p": 0.001,
                                "oracle_best": 0.0, "oracle_best_se": 0.0}}
    text = "\n".join(reading(methods, paired))
    assert ("N = 8, deployable (value-selected): `smc@8+learned` − `bon@8` = +0.050 ± 0.010, "
            "95% interval [+0.030, +0.070], exact sign-flip p = 0.001 (paired over 40 runs on "
            "20 tasks) → better") in text
    # separable only when both agree: an interval off 0 with an exact p of 0.25 is not, and
    # a row without the exact p is never called separable
    few = {"smc@8+learned": {**paired["smc@8+learned"], "deployable_reward_p": 0.25}}
    assert "p = 0.25 (paired over 40 runs on 20 tasks) → not separable (the t interval " \
           "excludes 0, the exact p = 0.25 does not)" in "\n".join(reading(methods, few))
    old = {"smc@8+learned": {k: v for k, v in paired["smc@8+learned"].items()
                             if k != "deployable_reward_p"}}
    assert "→ not called separable (the t interval excludes 0; no exact p recorded)" in \
        "\n".join(reading(methods, old))
    wide = {"smc@8+learned": {**paired["smc@8+learned"], "deployable_reward_lo": -0.01}}
    assert "[-0.010, +0.070], exact sign-flip p = 0.001 (paired over 40 runs on 20 tasks) → " \
           "not separable (95% interval includes 0)" in "\n".join(reading(methods, wide))
    assert "N = 8, oracle best-of-pool: `smc@8+learned` − `bon@8` = +0.000 (paired over 40 " \
           "runs) → identical on every run" in text
    easy = {**methods, "bon@15": {**methods["bon@15"], "success": 0.95}}
    assert any(x.startswith("Ceiling: Best-of-15 already succeeds on 95% of runs")
               for x in reading(easy))
    flat = {**methods, "bon@8": {**methods["bon@8"], "oracle_best": 0.55}}
    assert any(x.startswith("Saturation: Best-of-N's oracle reward is 0.550 at N = 8 and "
                            "0.550 at N = 15") for x in reading(flat))
    assert not any(x.startswith("Saturation") for x in reading(methods))
    dead = {k: {**v, "success": 0.0} for k, v in methods.items()}
    assert reading(dead)[0].startswith("No method solved any task")


def test_document_has_tables_plots_and_provenance(tmp_path):
    summary = {"env": "textcraft", "eval_status": "complete",
               "methods": {"bon@4": _m("bon", 4, 0.4, 0.1), "smc@4+c": _m("amc", 4, 0.5, 0.1)},
               "calibration": {"states": 50, "pearson": 0.41, "mae": 0.2},
               "promotion": {"promote": True, "reason": "no champion yet", "champion_after": "1"}}
    (tmp_path / "metrics.json").write_text(json.dumps(summary))
    plots = tmp_path / "plots"
    plots.mkdir()
    (plots / "success_vs_n.png").write_bytes(b"\x89PNG fake")
    out = write_results_doc(tmp_path / "metrics.json", plots, tmp_path / "docs" / "results.md")
    doc = out.read_text()
    assert "| `smc@4+c` | amc | 4 |" in doc and "0.500 ± 0.100" in doc
    assert "![success_vs_n](results-assets/success_vs_n.png)" in doc
    assert (tmp_path / "docs" / "results-assets" / "success_vs_n.png").exists()
    copied = json.loads((tmp_path / "docs" / "results-assets" / "summary.json").read_text())
    assert copied == summary  # the numbers travel with the document
    assert "Pearson 0.410" in doc and "promoted (no champion yet)" in doc
    assert "do not edit by hand" in doc


def test_extra_configuration_from_amc_run_and_cli_errors(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from amc.cli import app

    cli = CliRunner()
    run_dir = tmp_path / "faithful"
    r = cli.invoke(app, ["run", "--env", "synthetic", "--value", "exact", "-m",
                         "react,bon@4,smc@4", "--steps", "3", "--resample-steps", "2",
                         "--max-tasks", "4", "--quiet",
                         "--out", str(run_dir)])
    assert r.exit_code == 0, r.output
    assert json.loads((run_dir / "summary.json").read_text())["wall_s"] > 0
    summary = {"env": "synthetic", "eval_status": "complete", "wall_s": 5400.0, "sessions": 2,
               "config": {"env": {"name": "synthetic", "options": {}},
                          "prior": {"name": "synthetic", "options": {}},
                          "smc": {"max_steps": 3, "resample": "fixed", "resample_steps": [1],
                                  "resampler": "multinomial", "beta": 1.0},
                          "evaluate": {"split": "test", "max_tasks": 4, "seeds": [0, 1],
                                       "n_grid": [4], "smc_n_grid": None,
                                       "zero_shot_value": {"name": "none"}}},
               "methods": {"bon@4": _m("bon", 4, 0.4, 0.1), "smc@4+c": _m("amc", 4, 0.5, 0.1)}}
    monkeypatch.chdir(tmp_path)
    (tmp_path / "params.yaml").write_text("{}\n")  # every section at its defaults
    (tmp_path / "data" / "report").mkdir(parents=True)
    (tmp_path / "data" / "report" / "summary.json").write_text(json.dumps(summary))
    out = tmp_path / "docs" / "results.md"
    r = cli.invoke(app, ["results-doc", "--out", str(out), "--intro", "Why this profile.",
                         "--extra", "Second row=faithful/summary.json"])
    assert r.exit_code == 0, r.output
    doc = out.read_text()
    assert "Why this profile." in doc and "evaluation wall time: 1.50 h over 2 session(s)" in doc
    assert "seeds [0, 1], N ∈ [4]" in doc
    second = doc.split("## Second row")[1]
    assert "| `bon@4` | bon | 4 | 4 |" in second and "| `react` | react | 1 | 4 |" in second
    assert "`smc@4` − " not in second  # smc@4 here is the exact-value smc, not AMC
    copied = json.loads((out.parent / "results-assets" / "second-row.json").read_text())
    assert copied["paired"]["smc@4"]["baseline"] == "bon@4"  # from the run's results files
    assert copied["paired"]["smc@4"]["runs"] == 4
    (tmp_path / "data" / "report" / "summary.json").unlink()  # a paper run alone, no pipeline
    r = cli.invoke(app, ["results-doc", "--out", str(out), "--title", "Paper table",
                         "--extra", "Table 3=faithful/summary.json"])
    assert r.exit_code == 0, r.output
    doc = out.read_text()
    assert doc.startswith("# Paper table") and "## Table 3" in doc and "Environment:" not in doc
    assert (out.parent / "results-assets" / "table-3.json").is_file()
    bad = cli.invoke(app, ["results-doc", "--out", str(out), "--extra", "no-path-here"])
    assert bad.exit_code != 0 and "TITLE=PATH" in bad.output
    (tmp_path / "room.md").write_text("| regime | room |\n|---|---|\n| a | +0.1 |\n")
    r = cli.invoke(app, ["results-doc", "--out", str(out), "--section", "Search=room.md",
                         "--extra", "Table 3=faithful/summary.json"])
    assert r.exit_code == 0, r.output
    doc = out.read_text()
    assert doc.index("## Search") < doc.index("## Table 3") and "| a | +0.1 |" in doc
    bad = cli.invoke(app, ["results-doc", "--out", str(out), "--section", "Search=none.md"])
    assert bad.exit_code != 0 and "TITLE=FILE" in bad.output


def test_roles_of_amc_run_specs_follow_the_configured_values():
    from amc.reports.run_summary import _role, describe_config

    cfg = {"value": {"name": "learned", "options": {"model": "models:/v@champion"}},
           "values": {"zs": {"name": "zero-shot"}, "mine": {"name": "learned"}}}
    assert [_role(s, cfg) for s in ("react", "bon@8", "smc@8", "smc@8+zs", "smc@8+mine")] == [
        "react", "bon", "amc", "smc", "amc"]
    assert _role("smc@4", {"value": {"name": "zero-shot"}}) == "smc"
    lines = describe_config({"prior": {"name": "embedded", "options": {"cache": True}},
                             "env": {"name": "textcraft"}, "smc": {}})
    assert "model `gemma-3-270m`, prompt `menu`" in lines[1]  # registered defaults filled in


def test_unmeasured_deployable_is_na_and_old_summaries_read_as_new(tmp_path):
    nan = float("nan")
    old = {k.replace("max_weight_reward", "selected_reward"): v
           for k, v in _m("bon", 4, 0.4, 0.1).items() if "deployable" not in k}
    new = {**_m("amc", 4, 0.5, 0.1), "deployable_reward": nan, "deployable_reward_se": nan}
    summary = {"env": "textcraft", "eval_status": "complete",
               "methods": {"bon@4": old, "smc@4+c": new}}
    (tmp_path / "s.json").write_text(json.dumps(summary))
    doc = write_results_doc(tmp_path / "s.json", tmp_path, tmp_path / "r.md").read_text()
    bon_row = next(x for x in doc.splitlines() if x.startswith("| `bon@4`"))
    assert bon_row.count("0.400 ± 0.100") == 3  # max weight (read from selected_reward), ...
    assert "| n/a |" in bon_row and "| n/a |" in doc.split("| `smc@4+c`")[1]
    assert "deployable (value-selected): `smc@4+c` − `bon@4` = n/a → not measured" in doc


def test_paired_table_shows_intervals_and_na_for_unmeasured():
    from amc.reports.results_doc import paired_table

    row = {"baseline": "bon@8", "runs": 40, "tasks": 20, "deployable_reward": 0.05,
           "deployable_reward_se": 0.01, "deployable_reward_lo": 0.03,
           "deployable_reward_hi": 0.07, "oracle_best": 0.1, "oracle_best_se": 0.02,
           "max_weight_reward": None, "success": 0.1, "success_se": 0.02,
           "success_lo": 0.06, "success_hi": 0.14, "success_p": 0.0123}
    table = paired_table({"smc@8+c": row})
    line = table.splitlines()[2]
    assert line.startswith("| `smc@8+c` | `bon@8` | 40 | 20 | +0.050 [+0.030, +0.070] |")
    assert "+0.100 [+0.060, +0.140], p 0.012 |" in line
    assert "+0.100 ± 0.020" in line and "| n/a |" in line and "+0.100 [+0.060, +0.140]" in line
    assert paired_table({}) == ""


def test_a_pipeline_summary_gets_its_wall_time_from_the_evaluations_timing(tmp_path):
    """Issue 63: the wall time is no longer in summary.json (a rerun reproduces its bytes);
    the document reads it from the evaluation folder's timing/sessions.jsonl."""
    import time

    from amc.reports.results_doc import with_wall
    from amc.results import record_session

    ev = tmp_path / "eval"
    s = {"env": "synthetic", "config": {"evaluate": {"out_dir": str(ev)}}, "methods": {}}
    assert with_wall(s) == s  # no sitting recorded: nothing claimed
    record_session(ev, time.time() - 90.0, "finished")
    assert (ev / "timing" / "sessions.jsonl").is_file()
    got = with_wall(s)
    assert got["sessions"] == 1 and 89.0 <= got["wall_s"] < 3600.0
    assert with_wall({**s, "wall_s": 5400.0, "sessions": 2})["wall_s"] == 5400.0  # kept as is
