"""The drift criterion on hand-built numbers: flag what got worse, never an improvement.

The demo's old failure: a stale head whose calibration *improved* on the changed prior (bias
-0.47 -> -0.33, MAE 0.48 -> 0.40) was marked drifted. Here each quantity is moved one way and
the other around its threshold; only a move for the worse past the threshold flags.
"""

from __future__ import annotations

import math

import pytest

from amc.pipeline.gate_stats import drift_check

KW = {"max_calibration_increase": 0.05, "max_bias_shift": 0.05, "max_success_drop": 0.2,
      "max_gain_drop": 0.1}
BASE = {"gain": 0.25, "success": 0.9, "calibration_mae": 0.48, "calibration_bias": -0.47}


def test_the_demos_improved_calibration_is_not_drift() -> None:
    now = {**BASE, "calibration_mae": 0.40, "calibration_bias": -0.33}
    v = drift_check(BASE, now, **KW)
    assert not v.drift and v.reasons == ()
    assert v.bias_shift == pytest.approx(0.14) and v.bias_growth == pytest.approx(-0.14)
    assert v.calibration_increase == pytest.approx(-0.08)


def test_a_bias_flags_only_when_its_magnitude_grows_past_the_threshold() -> None:
    def flags(then: float, now: float) -> bool:
        return drift_check({"calibration_bias": then}, {"calibration_bias": now}, **KW).drift

    assert flags(-0.47, -0.53) and flags(0.10, 0.16) and flags(0.02, -0.08)
    assert not flags(-0.47, -0.51) and not flags(0.10, 0.14)  # worse, within the threshold
    assert not flags(-0.47, 0.0) and not flags(0.30, -0.10)  # toward 0: better, however far


def test_a_gain_that_fell_past_the_margin_is_drift() -> None:
    fell = drift_check(BASE, {**BASE, "gain": 0.10}, **KW)
    assert fell.drift and fell.gain_drop == pytest.approx(0.15)
    assert len(fell.reasons) == 1 and "AMC gain over Best-of-N" in fell.reasons[0]
    assert not drift_check(BASE, {**BASE, "gain": 0.16}, **KW).drift  # -0.09: within margin
    risen = drift_check(BASE, {**BASE, "gain": 0.60}, **KW)
    assert not risen.drift and risen.gain_drop == pytest.approx(-0.35)


def test_the_gain_criterion_is_skipped_when_either_side_lacks_it() -> None:
    assert drift_check({}, {"gain": -1.0}, **KW).gain_drop is None
    assert not drift_check({"gain": 0.5}, {"gain": None}, **KW).drift
    assert not drift_check({"gain": 0.5}, {"gain": math.nan}, **KW).drift
    # without a margin (callers of the older signature) the gain never flags
    kw = {k: v for k, v in KW.items() if k != "max_gain_drop"}
    assert not drift_check({"gain": 0.5}, {"gain": -0.5}, **kw).drift


def test_every_worse_quantity_gives_its_own_reason() -> None:
    now = {"gain": 0.0, "success": 0.6, "calibration_mae": 0.6, "calibration_bias": -0.6}
    v = drift_check(BASE, now, **KW)
    assert v.drift and len(v.reasons) == 4
    assert [r.split()[0] for r in v.reasons] == ["AMC", "success", "calibration", "calibration"]


def test_gain_by_task_averages_the_paired_seeds_of_each_task():
    from amc.monitor.drift import gain_by_task

    champ = {("a", 0): 1.0, ("a", 1): 1.0, ("b", 0): 0.0, ("b", 1): 1.0, ("c", 0): 1.0}
    bon = {("a", 0): 0.0, ("a", 1): 1.0, ("b", 0): 1.0, ("b", 1): 1.0}  # c has no pair
    assert gain_by_task(champ, bon) == {"a": 0.5, "b": -0.5}
