"""The representation section read off a hand-built benchmark result."""

from __future__ import annotations

from studies.sweeps.report_variants import variants_section, verdict


def result(auc_b: tuple[float, float], ll_b: tuple[float, float]) -> dict:
    fig = {"auc_within": 0.6, "log_loss": 0.5}
    return {"max_tasks": 40, "held_states": 1070.0, "k": 5,
            "splits": {"train": {"rows": 5402}, "test": {"tasks": 6}},
            "variants": {"a": {"states": 5402, "seconds": 16.0},
                         "b": {"states": 5402, "seconds": 80.0},
                         "c": {"states": 428, "seconds": 320.0},
                         "d": {"states": 428, "seconds": 1.0}},
            "figures": {v: dict(fig) for v in "abcd"},
            "bootstrap": {"b-a:auc_within": list(auc_b), "b-a:log_loss": list(ll_b),
                          "c-d:auc_within": [-0.1, -0.01], "c-d:log_loss": [-1.0, 0.1]},
            "lora": {"probe_states_per_s": 1.02}}


def test_lower_log_loss_is_better_and_higher_auc_is_better() -> None:
    assert verdict(0.01, 0.03, +1) == "better" and verdict(-0.03, -0.01, +1) == "worse"
    assert verdict(-0.3, -0.1, -1) == "better"  # log-loss fell
    assert verdict(0.1, 0.3, -1) == "worse" and verdict(-0.1, 0.1, -1) == "not separable"


def test_an_option_is_kept_only_when_a_figure_separates_for_it_and_none_against() -> None:
    none = variants_section(result((-0.005, 0.03), (-0.01, 0.5)))
    assert "Neither option is kept" in none
    assert "LoRA on the encoder (428 training states, 320 s) vs one head on the same 428" in none
    assert "AUC within (task, step) 0.600 vs 0.600, +0.000 [-0.005, +0.030]: not separable" \
        in none
    assert "AUC within (task, step) 0.600 vs 0.600, +0.000 [-0.100, -0.010]: worse" in none
    kept = variants_section(result((0.01, 0.03), (-0.2, 0.1)))
    assert "Kept for a declared sweep cell: an ensemble of 5 heads (p averaged)." in kept
    mixed = variants_section(result((0.01, 0.03), (0.1, 0.4)))  # better AUC, worse log-loss
    assert "Neither option is kept" in mixed
    assert variants_section(None) == ""
