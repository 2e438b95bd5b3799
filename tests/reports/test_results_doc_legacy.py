"""docs/results.md regenerates from the committed copies in results-assets/, old shapes too.

Copies written before the deployable selection existed key their methods by name (roles
resolved) and use the legacy metric names (``selected_reward`` for today's
``max_weight_reward``); they must load, map the names, and show what they lack as n/a.
"""

import json

import pytest

from amc.reports.results_doc import write_results_doc
from amc.reports.run_summary import load_run_summary


def _old_row(role, n, reward, se):
    """A method row as results-assets/ copies of 2026-11-29 hold it (no deployable metric)."""
    return {"method": f"{role}@{n}", "role": role, "n": n, "tasks": 6, "runs": 6,
            "selected_reward": reward, "selected_reward_se": se, "oracle_best": reward + 0.1,
            "oracle_best_se": se, "weighted_mean_reward": reward / 2,
            "weighted_mean_reward_se": se, "success": reward, "success_se": se,
            "tokens_per_task": 1234.0, "cost_per_task": 0.0}


def _old_summary():
    paired = {"smc@4": {"baseline": "bon@4", "method": "smc@4", "runs": 6,
                        "selected_reward": -0.25, "selected_reward_se": 0.125,
                        "oracle_best": -0.25, "oracle_best_se": 0.125,
                        "success": -0.25, "success_se": 0.125}}
    return {"config": {"env": {"name": "textcraft", "options": {"max_depth": 1}},
                       "split": "test", "max_tasks": 6, "seeds": [0]},
            "methods": {"bon@4": _old_row("bon", 4, 0.5, 0.2),
                        "smc@4": _old_row("amc", 4, 0.25, 0.15)},
            "paired": paired, "wall_s": 600.0}


def test_old_shape_loads_with_legacy_names_mapped_and_missing_metrics_absent(tmp_path):
    path = tmp_path / "old.json"
    path.write_text(json.dumps(_old_summary()))
    s = load_run_summary(path)
    bon = s["methods"]["bon@4"]
    assert bon["max_weight_reward"] == 0.5 and bon["max_weight_reward_se"] == 0.2
    assert "selected_reward" not in bon and "deployable_reward" not in bon  # not made up
    assert s["methods"]["smc@4"]["role"] == "amc"  # the stored role, not re-derived
    assert s["paired"]["smc@4"]["max_weight_reward"] == -0.25  # stored pairs kept, renamed

    doc = write_results_doc(None, tmp_path, tmp_path / "r.md",
                            extra=[("Old run", path)]).read_text()
    bon_line = next(x for x in doc.splitlines() if x.startswith("| `bon@4`"))
    # deployable n/a, oracle, max final weight (from selected_reward), weighted mean, success
    assert "| n/a | 0.600 ± 0.200 | 0.500 ± 0.200 | 0.250 ± 0.200 | 0.500 ± 0.200 |" in bon_line
    assert "max final weight (uses the reward)" in doc and "reward-free (max weight)" not in doc
    assert "`smc@4` − `bon@4` = -0.250 ± 0.125 (paired over 6 runs)" in doc
    assert "N = 4, deployable (value-selected): not measured" in doc


@pytest.mark.parametrize("methods", [
    ["react", "bon@4"],                              # names only, no rows
    {"bon@4": {"success": 0.5}},                     # keyed rows without role and N
    [],                                              # nothing at all
])
def test_unknown_shape_fails_with_a_clear_error(tmp_path, methods):
    path = tmp_path / "odd.json"
    path.write_text(json.dumps({"config": {}, "methods": methods}))
    with pytest.raises(ValueError, match=r"odd\.json: not a run summary: 'methods' must be"):
        load_run_summary(path)
    path.write_text(json.dumps([1, 2]))
    with pytest.raises(ValueError, match="a JSON object is expected"):
        load_run_summary(path)


def test_regenerates_from_its_own_copies(tmp_path):
    """A fresh clone has only results.md's assets: reading them in place must not fail."""
    assets = tmp_path / "results-assets"
    assets.mkdir()
    pipeline = {"env": "textcraft", "eval_status": "complete",
                "methods": {k: v for k, v in _old_summary()["methods"].items()}}
    (assets / "summary.json").write_text(json.dumps(pipeline))
    (assets / "plot.png").write_bytes(b"\x89PNG fake bytes")
    (assets / "old-run.json").write_text(json.dumps(_old_summary()))
    out = write_results_doc(assets / "summary.json", assets, tmp_path / "results.md",
                            extra=[("Old run", assets / "old-run.json")])
    doc = out.read_text()
    assert "![plot](results-assets/plot.png)" in doc and "## Old run" in doc
    assert json.loads((assets / "summary.json").read_text()) == pipeline  # left as it was
    again = load_run_summary(assets / "old-run.json")  # the rewritten copy reads back
    assert again["methods"]["bon@4"]["max_weight_reward"] == 0.5


def test_cli_reads_the_summary_and_plots_it_is_given(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from amc.cli import app

    monkeypatch.chdir(tmp_path)
    (tmp_path / "params.yaml").write_text("{}\n")  # report.summary_file (absent) is not read
    (tmp_path / "keep").mkdir()
    (tmp_path / "keep" / "s.json").write_text(json.dumps(
        {"env": "textcraft", "eval_status": "complete", "methods": _old_summary()["methods"]}))
    (tmp_path / "keep" / "a.png").write_bytes(b"png")
    cli = CliRunner()
    r = cli.invoke(app, ["results-doc", "--out", "d/results.md", "--summary", "keep/s.json",
                         "--plots-dir", "keep"])
    assert r.exit_code == 0, r.output
    doc = (tmp_path / "d" / "results.md").read_text()
    assert "from `keep/s.json`" in doc and "| `smc@4` | amc | 4 |" in doc
    assert (tmp_path / "d" / "results-assets" / "a.png").read_bytes() == b"png"
    bad = cli.invoke(app, ["results-doc", "--out", "d/results.md", "--summary", "nope.json"])
    assert bad.exit_code != 0 and "nope.json" in bad.output


def test_the_committed_results_document_is_what_its_committed_copies_generate(tmp_path):
    """`scripts/results_doc.sh` on the committed docs/ gives the committed docs/results.md
    (but for the generation date): a hand edit, or a copy left out of the repo, fails."""
    import os
    import re
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    for rel in ("docs", "configs/llm-regime", "scripts/results_doc.sh", "studies",
                "evidence/llm-regime/testset60/evaluation.json", "evidence/llm-regime/rounds",
                "evidence/llm-regime/regime-search/room.md",
                "evidence/llm-regime/regime-search/test-sizing.md",
                "evidence/llm-regime/zero-shot-yesno-auc.md",
                "evidence/sim-value-options/result.md", "evidence/sft-prior/sft-run.md",
                "evidence/sft-prior/regime-search/room.md", "evidence/sft-prior/failure-modes.md",
                "evidence/sft-prior/test-sizing.md", "evidence/sft-prior/dagger/sft-run.md",
                "evidence/sft-prior/dagger/room.md", "evidence/sft-prior/dagger/test-sizing.md",
                "evidence/sft-prior/dagger/sampling.md", "evidence/sft-prior/multistep/result.md",
                "evidence/sft-prior/multistep/fidelity.md", "evidence/sft-prior/progress/result.md",
                "evidence/sft-prior/progress/by-plan-length.md",
                "studies/sft_prior/progress/test.md", "evidence/sft-prior/band/result.md",
                "studies/sft_prior/band/test.md", "evidence/sft-prior/dagger2/sft-run.md",
                "evidence/sft-prior/dagger2/band/result.md",
                "evidence/sft-prior/dagger3/sft-run.md",
                "evidence/sft-prior/dagger3/band/result.md",
                "evidence/sft-prior/late/result.md", "evidence/sft-prior/horizon/result.md",
                "evidence/sft-prior/refusals/result.md", "evidence/sft-prior/plan67/result.md",
                "evidence/sft-prior/plan67/by-task.md"):
        src, dst = repo / rel, tmp_path / rel
        cells = ("/dagger", "/multistep/", "progress/", "band/", "/late/", "/horizon/",
                 "/refusals/", "/plan67/")
        if any(c in rel for c in cells) and not src.exists():  # not run yet
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if src.is_dir() else shutil.copy)(src, dst)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    subprocess.run(["bash", "scripts/results_doc.sh"], cwd=tmp_path, env=env, check=True,
                   capture_output=True)

    def undated(text: str) -> str:
        return re.sub(r"\) on \d{4}-\d\d-\d\d \d\d:\d\d UTC;", ") on <date>;", text)

    assert undated((tmp_path / "docs/results.md").read_text()) == undated(
        (repo / "docs/results.md").read_text())
