"""The README's measured paragraph is generated: committed == regenerated, and its verdicts."""

from __future__ import annotations

from pathlib import Path

import pytest

from amc.reports import readme

ROOT = Path(__file__).resolve().parents[2]


def test_the_committed_readme_paragraph_is_what_the_committed_evidence_generates() -> None:
    assert readme.main(["--root", str(ROOT), "--check"]) == 0


def test_a_hand_edited_number_fails_the_check(tmp_path: Path) -> None:
    grpo = [readme.GRPO / f for f in ("frozen-summary.json", "policy-summary.json",
                                       "metrics.json")]
    for rel in (readme.EVIDENCE, readme.LLM_SUMMARY, readme.ROUNDS, *grpo):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes((ROOT / rel).read_bytes())
    text = (ROOT / "README.md").read_text()
    para = text.split(readme.BEGIN)[1].split(readme.END)[0]
    assert "+0.028" in para  # AMC@4 − Best-of-4 on the declared 60-task set
    (tmp_path / "README.md").write_text(text.replace("+0.028", "+0.128"))
    assert readme.main(["--root", str(tmp_path), "--check"]) == 1
    assert readme.main(["--root", str(tmp_path)]) == 0  # rewritten from the sources ...
    assert (tmp_path / "README.md").read_text() == text  # ... back to the committed text


def _summary(lo: float, hi: float, p: float) -> dict:
    row = {"oracle_best": (lo + hi) / 2, "oracle_best_lo": lo, "oracle_best_hi": hi,
           "oracle_best_p": p, "tasks": 12}
    return {"env": "textcraft", "seeds": [0, 1, 2],
            "methods": {"smc@4+challenger": {"n": 4, "role": "amc"},
                        "smc@4": {"n": 4, "role": "smc"}},
            "paired": {"smc@4+challenger": row, "smc@4": {**row, "oracle_best_p": 0.001}}}


def test_separable_needs_the_interval_and_the_exact_p_to_agree() -> None:
    # the t interval excludes 0 but the exact p does not (3 nonzero task differences)
    assert "no difference is separable" in readme.llm_sentence(_summary(0.007, 0.215, 0.125))
    assert "no difference is separable" in readme.llm_sentence(_summary(-0.01, 0.2, 0.01))
    both = readme.llm_sentence(_summary(0.02, 0.2, 0.01))
    assert "separable (interval and exact p agree) at N = 4" in both
    assert "N = 4: +0.110 [+0.020, +0.200], exact p 0.01" in both  # only the AMC row


def test_missing_markers_or_sources_are_refused() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        readme.render("no markers here", "x")
    with pytest.raises(ValueError, match="In short"):
        readme.sweep_sentence("# evidence\nno headline")
    with pytest.raises(ValueError, match="Other benchmarks"):
        readme.bench_sentences("# evidence\n**In short:** x")
    with pytest.raises(ValueError, match="Value goal"):
        readme.value_goal_sentence("# evidence\n**In short:** x")
    assert readme.value_goal_sentence("a\n**Value goal:** met.\nb") == "met."
    with pytest.raises(ValueError, match="no AMC row"):
        readme.llm_sentence({**_summary(0, 1, 1), "paired": {}})


def _grpo(success: float, bon: float) -> tuple[dict, dict, dict]:
    def row(method: str, x: float, ok: float = 0.0) -> dict:
        return {"method": method, "success": ok, "oracle_best": x, "oracle_best_se": 0.02}

    cfg = {"max_tasks": 4, "seeds": [0, 1], "env": {"options": {"max_depth": 1}},
           "smc": {"max_steps": 4}}
    frozen = {"config": cfg, "methods": [row("react", 0.3), row("bon@4", 0.4),
                                         row("smc@4", 0.41)]}
    policy = {"config": cfg, "methods": [row("react", 0.2), row("bon@4", bon, success)]}
    return frozen, policy, {"costs": {"cpu_s": 4080.8}}


def test_the_grpo_sentence_reads_success_and_separation_off_the_summaries() -> None:
    same = readme.grpo_sentence(*_grpo(0.0, 0.42))
    assert "no method of either policy succeeded" in same and "4,081 CPU s" in same
    assert "is inside two combined standard errors" in same
    apart = readme.grpo_sentence(*_grpo(0.25, 0.6))
    assert "successes: GRPO bon@4" in apart and "not all inside" in apart


def test_the_zero_shot_clause_reads_the_paired_values_and_the_calls() -> None:
    s = _summary(0.02, 0.2, 0.01)
    assert readme.zero_shot_clause(s) == ""  # an older summary: no paired_values, no clause
    row = {"oracle_best": -0.006, "oracle_best_lo": -0.025, "oracle_best_hi": 0.014,
           "oracle_best_p": 1.0, "calls": 19.0, "baseline_calls": 26.35}
    text = readme.zero_shot_clause({**s, "paired_values": {"smc@4+challenger": row}})
    assert "N = 4: -0.006 [-0.025, +0.014], exact p 1, at 19.0 vs 26.4 prior calls per run " \
        "(72%); not separable" in text
    better = {**row, "oracle_best": 0.1, "oracle_best_lo": 0.05, "oracle_best_p": 0.001}
    assert "steers better" in readme.zero_shot_clause({**s, "paired_values":
                                                       {"smc@4+challenger": better}})
    # the exact p must agree with the interval before the clause calls it separable
    assert "not separable" in readme.zero_shot_clause(
        {**s, "paired_values": {"smc@4+challenger": {**better, "oracle_best_p": 0.2}}})
    assert "with the learned value − Best-of-N" in readme.llm_sentence(
        {**s, "paired_values": {"smc@4+challenger": row}})
