"""The Table-11-like comparison in docs/results.md: rows, costs, and refusal of unequal runs."""

import json
from pathlib import Path

import pytest

from amc.reports.grpo_table import grpo_table
from amc.reports.results_doc import write_results_doc

CFG = {"env": {"name": "textcraft"}, "split": "test", "max_tasks": 3, "task_ids": None,
       "seeds": [0, 1]}


def _row(method: str, success: float, tokens: float) -> dict:
    return {"method": method, "tasks": 3, "runs": 6, "success": success, "success_se": 0.1,
            "oracle_best": success, "oracle_best_se": 0.1, "selected_reward": success,
            "weighted_mean_reward": success, "tokens_per_task": tokens, "cost_per_task": 0.0}


def _summaries(tmp_path: Path, policy_cfg: dict | None = None) -> tuple[Path, Path, Path]:
    frozen = {"config": CFG, "methods": [_row("react", 0.2, 900), _row("bon@4", 0.5, 3600),
                                         _row("amc@4", 0.7, 3700)]}
    policy = {"config": policy_cfg or CFG,
              "methods": [_row("react", 0.6, 880), _row("bon@4", 0.8, 3500)]}
    metrics = {"costs": {"wall_s": 321.4, "cpu_s": 600.2, "gpu_s": 0.0,
                         "generated_tokens": 1234, "rollouts": 32}}
    paths = tmp_path / "frozen.json", tmp_path / "policy.json", tmp_path / "metrics.json"
    for p, d in zip(paths, (frozen, policy, metrics), strict=True):
        p.write_text(json.dumps(d))
    (tmp_path / "curve.jsonl").write_text(
        json.dumps({"mean_reward": 0.1, "kl": 0.0}) + "\n"
        + json.dumps({"mean_reward": 0.4, "kl": 0.02}) + "\n")
    return paths


def test_table_puts_training_cost_on_grpo_rows_only(tmp_path: Path) -> None:
    f, p, m = (json.loads(x.read_text()) for x in _summaries(tmp_path))
    lines = grpo_table(f, p, m["costs"])
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]
    assert [(r[0], r[1], r[2]) for r in rows] == [
        ("frozen", "`react`", "1"), ("frozen", "`bon@4`", "4"), ("frozen", "`amc@4`", "4"),
        ("GRPO", "`react`", "1"), ("GRPO", "`bon@4`", "4")]
    assert rows[0][7:] == ["0", "0", "0", "0"]
    assert rows[3][4] == "0.600 ± 0.100" and rows[3][6] == "880"
    assert rows[4][7:] == ["321", "600", "0", "1234"]


def test_runs_over_other_tasks_are_refused(tmp_path: Path) -> None:
    f, p, m = _summaries(tmp_path, {**CFG, "seeds": [0]})
    with pytest.raises(ValueError, match="differ in seeds"):
        write_results_doc(None, tmp_path, tmp_path / "r.md", grpo=(f, p, m))


def test_results_doc_gets_the_section_with_the_curve_ends(tmp_path: Path) -> None:
    out = write_results_doc(None, tmp_path, tmp_path / "r.md", grpo=_summaries(tmp_path))
    text = out.read_text()
    assert "Table 11 in miniature" in text
    assert "mean group reward 0.100 (first round) → 0.400 (last)" in text
    assert "| GRPO | `bon@4` | 4 |" in text


@pytest.mark.parametrize(("value", "said"), [
    ({"name": "none"}, "frozen `smc@4`: SMC with the prior only (no value: not AMC)"),
    ({"name": "learned", "options": {"model": "runs/v"}},
     "frozen `smc@4`: AMC (learned value `runs/v`)"),
])
def test_section_says_which_value_the_frozen_smc_used(tmp_path: Path, value: dict,
                                                      said: str) -> None:
    cfg = {**CFG, "value": value}
    f, p, m = _summaries(tmp_path, cfg)
    frozen = json.loads(f.read_text())
    frozen["config"] = cfg
    frozen["methods"][2]["method"] = "smc@4"
    f.write_text(json.dumps(frozen))
    text = write_results_doc(None, tmp_path, tmp_path / "r.md", grpo=(f, p, m)).read_text()
    assert f"- {said}" in text
    assert "AMC (learned" not in text if value["name"] == "none" else "not AMC" not in text


def test_a_single_task_shows_the_mean_without_a_standard_error(tmp_path: Path) -> None:
    """One task has no s.e. (:func:`amc.stats.mean_se` gives NaN): no "± nan" in the table."""
    f, p, m = (json.loads(x.read_text()) for x in _summaries(tmp_path))
    for row in p["methods"]:
        row["success_se"] = row["oracle_best_se"] = float("nan")
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in
            grpo_table(f, p, m["costs"])[2:]]
    assert rows[3][4:6] == ["0.600", "0.600"] and rows[0][4] == "0.200 ± 0.100"
