"""The value-options study's document is generated: results.md is exactly what its report
renders from results.json, and the study's bootstrap is the pooled within-group AUC."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from amc.value.metrics import within_group_auc
from studies.value_options.measure import bootstrap, task_counts
from studies.value_options.report import markdown

HERE = Path(__file__).resolve().parents[2] / "studies" / "value_options"


def test_results_md_is_generated_from_results_json() -> None:
    doc = json.loads((HERE / "results.json").read_text())
    assert (HERE / "results.md").read_text() == markdown(doc)


def test_task_counts_pool_to_the_within_group_auc() -> None:
    rng = np.random.default_rng(0)
    groups = [(f"t{i % 7}", 2 if i % 3 else 4) for i in range(90)]
    y = rng.random(90) < 0.4
    score = rng.random(90) + 0.3 * y
    counts = task_counts(score, y, groups, 2)
    sel = [i for i, g in enumerate(groups) if g[1] == 2]
    want = within_group_auc(score[sel], y[sel], [groups[i] for i in sel])
    boot = bootstrap({"a": counts, "b": counts}, "a")
    assert boot["a"]["auc"] == pytest.approx(want)
    assert boot["b"]["diff"] == 0.0 and boot["a"]["lo"] <= want <= boot["a"]["hi"]


def test_chosen_results_md_is_generated_from_results_chosen_json() -> None:
    from studies.value_options.report_chosen import markdown as chosen_markdown

    doc = json.loads((HERE / "results-chosen.json").read_text())
    assert (HERE / "results-chosen.md").read_text() == chosen_markdown(doc)


def test_chosen_held_out_is_step_1_of_untrained_tasks_pooled_over_seeds() -> None:
    from studies.value_options import chosen, states

    rounds = [r for d in sorted(states.ROUNDS.glob("round-*"))
              for r in states.load_results(d, "bon@15")]
    trained = {str(r.task_id) for r in rounds}
    sets, info = chosen.held_out(states.renderer("old", None), trained)
    search = sets["search-depth1-h8"]
    assert {g[1] for g in search.groups} == {1} and not {g[0] for g in search.groups} & trained
    assert info["search-depth1-h8"]["tasks_kept"] + info["search-depth1-h8"][
        "tasks_in_training"] == info["search-depth1-h8"]["tasks"]
    assert {r[1] for r in search.runs} == {0, 1}  # both seeds' siblings in one (task, 1) group
    # a state at step 1 exists for each rollout that did not end at step 1, and its success is
    # its rollout's success within the horizon
    kept = [r for r in states.load_results(chosen.SEARCH, "bon@8") if str(r.task_id) not in trained]
    want = [sum(float(s.reward) for s in t.steps) >= 1.0 for r in kept for t in r.trajectories
            if len(t.steps) > 1]
    first = [float(t.steps[0].reward) for r in kept for t in r.trajectories if len(t.steps) > 1]
    assert search.success.tolist() == want and search.reward_so_far.tolist() == first
