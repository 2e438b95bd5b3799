"""Headline metrics: few short keys, the right role at the largest N, absent when unmeasured."""

from __future__ import annotations

import math

from amc.pipeline.artifacts import eval_headline, promotion_headline, train_headline


def _ev() -> dict:
    rows = {"react": ("react", 1, 0.61111), "bon@2": ("bon", 2, 0.5), "bon@4": ("bon", 4, 0.81481),
            "smc@4": ("smc", 4, 0.7), "smc@2+challenger": ("amc", 2, 0.1),
            "smc@4+challenger": ("amc", 4, 0.9), "smc@4+champion": ("champion", 4, 0.2)}
    return {"status": "complete", "methods": {
        s: {"role": r, "n": n, "deployable_reward": v, "oracle_best": v + 0.05}
        for s, (r, n, v) in rows.items()}}


def test_eval_headline_reads_each_role_at_its_largest_n() -> None:
    assert eval_headline(_ev(), selection=True) == {
        "complete": 1, "react": 0.611, "bon": 0.815, "smc": 0.7, "amc": 0.9}
    oracle = eval_headline(_ev(), selection=False)
    assert oracle["bon"] == round(0.81481 + 0.05, 3) and oracle["amc"] == 0.95


def test_eval_headline_leaves_out_what_did_not_run_or_is_not_finite() -> None:
    ev = _ev()
    del ev["methods"]["smc@4"]
    ev["methods"]["bon@4"]["deployable_reward"] = math.nan
    ev["status"] = "incomplete"
    h = eval_headline(ev, selection=True)
    assert h["complete"] == 0 and "smc" not in h and "bon" not in h and h["amc"] == 0.9


def test_promotion_and_train_headlines() -> None:
    d = {"promote": False, "tested": True, "n_pairs": 36, "delta": -0.01234,
         "p_value": 0.81234, "se": 0.1}
    assert promotion_headline(d) == {"promoted": 0, "delta": -0.012, "p": 0.8123}
    assert promotion_headline({"promote": True, "n_pairs": None}) == {"promoted": 1}
    # decided without a test: its mean change is no evidence, so it is not a headline
    untested = {**d, "tested": False, "p_value": None}
    assert promotion_headline(untested) == {"promoted": 0}
    best = {"best_val_auc": 0.64966, "best_val_mae": 0.22467, "best_val_brier": 0.3}
    assert train_headline("3", best) == {"version": 3, "auc": 0.65, "mae": 0.225}
