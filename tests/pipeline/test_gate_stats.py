"""The gate's and the monitor's pure statistics: size, power, minimum effect, guards, drift."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from amc.pipeline.gate_stats import (
    calibration_bias,
    calibration_mae,
    cluster_se,
    drift_check,
    guard_vetoes,
    paired_test,
)


def test_p_value_is_scipys_one_sided_paired_t_test() -> None:
    rng = np.random.default_rng(0)
    d = rng.normal(0.1, 0.3, size=25)
    r = paired_test(d, min_effect=0.02, level=0.05)
    ref = stats.ttest_1samp(d - 0.02, 0.0, alternative="greater")
    assert r.p_value == pytest.approx(ref.pvalue, rel=1e-9)
    assert r.mean == pytest.approx(d.mean()) and r.n == 25
    assert r.se == pytest.approx(d.std(ddof=1) / 5)
    # the lower bound and the p-value agree about passing
    assert (r.lower_bound > 0.02) == r.passes == (ref.pvalue < 0.05)


def rejection_rate(effect: float, n: int, min_effect: float, level: float, reps: int = 2000
                   ) -> float:
    rng = np.random.default_rng(1)
    hits = sum(paired_test(rng.normal(effect, 1.0, size=n), min_effect=min_effect,
                           level=level).passes for _ in range(reps))
    return hits / reps


def test_size_is_the_level_at_the_minimum_effect() -> None:
    # a challenger exactly min_effect better is promoted at most `level` of the time
    assert rejection_rate(0.1, 30, 0.1, 0.05) == pytest.approx(0.05, abs=0.015)
    # a worse one almost never
    assert rejection_rate(-0.2, 30, 0.0, 0.05) < 0.005


def test_power_against_a_real_improvement() -> None:
    # 0.6 s.d. above the minimum effect with 40 pairs: the test finds it nearly always
    assert rejection_rate(0.7, 40, 0.1, 0.05) > 0.95
    # power grows with the number of pairs
    assert rejection_rate(0.3, 60, 0.0, 0.05, 500) > rejection_rate(0.3, 15, 0.0, 0.05, 500)


def test_minimum_effect_blocks_tiny_but_certain_gains() -> None:
    d = np.full(50, 0.05) + np.random.default_rng(2).normal(0, 1e-3, 50)
    assert paired_test(d, min_effect=0.0, level=0.05).passes
    assert not paired_test(d, min_effect=0.1, level=0.05).passes


def test_degenerate_inputs() -> None:
    assert not paired_test([0.5], min_effect=0.0, level=0.05).passes  # one pair: no variance
    assert not paired_test([], min_effect=0.0, level=0.05).passes
    same = paired_test([0.2] * 10, min_effect=0.1, level=0.05)
    assert same.passes and same.se == 0.0
    assert not paired_test([0.0] * 10, min_effect=0.0, level=0.05).passes  # a tie keeps
    with pytest.raises(ValueError, match="level"):
        paired_test([0.1, 0.2], min_effect=0.0, level=1.5)
    with pytest.raises(ValueError, match="finite"):
        paired_test([0.1, math.nan], min_effect=0.0, level=0.05)


def test_guards_veto_costlier_or_worse_calibrated_challengers() -> None:
    champ = {"tokens_per_task": 100.0, "calibration_mae": 0.20}
    kw = {"max_token_increase": 0.5, "max_calibration_increase": 0.05}
    assert guard_vetoes({"tokens_per_task": 150.0, "calibration_mae": 0.25}, champ, **kw) == []
    v = guard_vetoes({"tokens_per_task": 151.0, "calibration_mae": 0.2}, champ, **kw)
    assert len(v) == 1 and "tokens" in v[0]
    v = guard_vetoes({"tokens_per_task": 10.0, "calibration_mae": 0.26}, champ, **kw)
    assert len(v) == 1 and "calibration" in v[0]
    # an unmeasured guard is not applied
    assert guard_vetoes({"tokens_per_task": None, "calibration_mae": math.nan}, champ, **kw) == []


def test_calibration_mae_and_bias() -> None:
    assert calibration_mae([0.0, 1.0], [0.5, 0.5]) == pytest.approx(0.5)
    assert calibration_bias([0.0, 1.0], [0.5, 0.5]) == pytest.approx(0.0)
    assert calibration_bias([1.0, 1.0], [0.5, 0.25]) == pytest.approx(0.625)
    assert math.isnan(calibration_mae([], []))
    with pytest.raises(ValueError, match="shape"):
        calibration_mae([0.0], [0.0, 1.0])


def test_drift_check_thresholds() -> None:
    base = {"calibration_mae": 0.10, "success": 0.8}
    kw = {"max_calibration_increase": 0.05, "max_bias_shift": 0.05, "max_success_drop": 0.2}
    ok = drift_check(base, {"calibration_mae": 0.14, "success": 0.65}, **kw)
    assert not ok.drift and ok.calibration_increase == pytest.approx(0.04)
    cal = drift_check(base, {"calibration_mae": 0.16, "success": 0.8}, **kw)
    assert cal.drift and "calibration" in cal.reasons[0]
    suc = drift_check(base, {"calibration_mae": 0.1, "success": 0.5}, **kw)
    assert suc.drift and suc.success_drop == pytest.approx(0.3) and "success" in suc.reasons[0]
    bias = drift_check({"calibration_bias": -0.02}, {"calibration_bias": 0.08}, **kw)
    assert bias.drift and bias.bias_shift == pytest.approx(0.10) and "bias" in bias.reasons[0]
    assert bias.bias_growth == pytest.approx(0.06)
    # a bias toward 0 is an improvement: never drift (see tests/monitor/test_drift_check.py)
    assert not drift_check({"calibration_bias": 0.1}, {"calibration_bias": 0.0}, **kw).drift
    assert drift_check({"calibration_bias": -0.2}, {"calibration_bias": -0.26}, **kw).drift
    none = drift_check({}, {"calibration_mae": 9.0, "success": 0.0}, **kw)
    assert not none.drift and none.calibration_increase is None


def test_cluster_se_is_the_iid_se_for_singletons_and_ignores_duplicated_states() -> None:
    x = np.random.default_rng(0).normal(size=40)
    assert cluster_se(x, list(range(40))) == pytest.approx(x.std(ddof=1) / np.sqrt(40))
    # each task's value repeated 5 times (one task's correlated states): no more information
    dup = np.repeat(x, 5)
    assert cluster_se(dup, np.repeat(np.arange(40), 5)) == pytest.approx(cluster_se(x, range(40)))
    assert cluster_se(dup, range(200)) < 0.5 * cluster_se(x, range(40))  # iid would overclaim
    assert math.isnan(cluster_se([1.0, 2.0], ["t", "t"]))
    with pytest.raises(ValueError, match="cluster"):
        cluster_se([1.0], [])


def test_drift_at_a_level_holds_it_on_an_unchanged_prior_and_flags_a_real_fall() -> None:
    """2,000 checks where nothing changed, each quantity measured with its s.e. at both ends:
    the point thresholds alone false-alarm often (a threshold within noise); at level 0.05 the
    false-alarm rate stays within level + 2 s.e. A fall of the gain by threshold + 4 s.e. of
    the change is flagged >= 80% of the time."""
    rng = np.random.default_rng(11)
    se = {"gain": 0.04, "success": 0.05, "calibration_mae": 0.02, "calibration_bias": 0.03}
    truth = {"gain": 0.1, "success": 0.6, "calibration_mae": 0.3, "calibration_bias": -0.1}
    kw = {"max_calibration_increase": 0.02, "max_bias_shift": 0.03, "max_success_drop": 0.05,
          "max_gain_drop": 0.04}

    def side(shift: float = 0.0) -> dict[str, float]:
        out = {q: truth[q] + rng.normal(0, se[q]) for q in truth}
        out["gain"] -= shift
        return {**out, **{f"{q}_se": s for q, s in se.items()}}

    sims = 2000
    point = sum(drift_check(side(), side(), **kw).drift for _ in range(sims)) / sims
    held = sum(drift_check(side(), side(), **kw, level=0.05).drift for _ in range(sims)) / sims
    assert point > 0.2  # what the demo's first run met on its unchanged prior
    assert held <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / sims)
    fall = kw["max_gain_drop"] + 4 * math.hypot(se["gain"], se["gain"])
    hits = [drift_check(side(), side(fall), **kw, level=0.05) for _ in range(500)]
    assert sum(any("AMC gain" in r for r in h.reasons) for h in hits) / 500 >= 0.8
    assert "s.e." in next(h for h in hits if h.drift).reasons[0]
