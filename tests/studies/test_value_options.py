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
