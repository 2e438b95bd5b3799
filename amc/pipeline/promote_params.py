"""Typed ``promote`` section of ``params.yaml``: the promotion gate's settings.

Read by :mod:`amc.pipeline.promote` (statistics in :mod:`amc.pipeline.gate_stats`) and part of
:class:`amc.pipeline.params.PipelineParams`; kept apart so the params module stays small.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from amc.config import Frozen


class PromoteParams(Frozen):
    """``promote``: the gate, challenger vs champion paired over a frozen evaluation set."""

    metric: Literal["deployable_reward", "oracle_best", "max_weight_reward",
                    "weighted_mean_reward", "success", "success_deployable"] | None = None
    """Primary metric; None = deployable_reward when evaluate.selection_value is set, else
    oracle_best (max_weight_reward uses the reward). oracle_best is always recorded too."""
    n: int | None = Field(None, ge=1)
    """Compare at this N (None = the largest N of evaluate.n_grid)."""
    level: float = Field(0.05, gt=0, lt=1)
    """One-sided test level: a challenger that is not better gets promoted at most this often."""
    min_effect: float = Field(0.0, ge=0)
    """Minimum mean paired improvement of the metric worth a promotion (metric units)."""
    reuse: Literal["spend", "fixed"] = "spend"
    """Frozen-set reuse over rounds. spend: the k-th decision on one frozen set is tested at
    level / (k (k + 1)), so over the set's whole life a not-better challenger is promoted at
    most ``level`` of the time (cost: later decisions need larger gains); fixed: every
    decision at ``level`` (each round's false promotions add up)."""
    power: float = Field(0.8, gt=0, lt=1)
    """Power at which the decision's minimum detectable effect (mde) is recorded."""
    target_mde: float | None = Field(None, gt=0)
    """The per-task improvement the frozen set is sized to detect at the level and ``power``:
    the decision records the tasks this needs at the observed per-task sd (the cost: each
    gate runs challenger and champion on tasks x seeds) and says when the set is smaller.
    None: not checked (``max_mde`` sizes it when set)."""
    max_mde: float | None = Field(None, gt=0)
    """Refuse to test when the gate cannot detect this per-task improvement (metric units):
    when its mde at the level and ``power`` exceeds it, or there is none (fewer than 2 tasks,
    sd 0, or too few tasks for the sign-flip p to reach the level), the decision keeps the
    champion, ``tested: false``, and says it decided without a test. None: always test."""
    max_token_increase: float = Field(0.25, ge=0)
    """Guard: veto when tokens per task exceed (1 + this) x the champion's."""
    max_calibration_increase: float = Field(0.05, ge=0)
    """Guard: veto when the value's calibration error (MAE of predicted vs realised future
    reward, on the evaluation's prior rollouts) exceeds the champion's by more than this."""
    calibration_states: int = Field(200, ge=10)
    """At most this many (state, realised future reward) pairs for the calibration guard."""
    drift_margin: float = Field(0.05, ge=0)
    """Against a champion marked drifted: promote a better calibrated challenger unless it is
    worse than this on the metric (a non-inferiority test at the same level)."""
    frozen_set: Path = Path("frozen/eval_set.json")
    """The evaluation set (tasks, seeds) fixed at the first gated evaluation; later
    evaluations on any other set are refused."""
    alias: str = "champion"
    """Registry alias that marks the deployed model."""
    out_file: Path = Path("data/promotion/decision.json")
    """Where the decision and its evidence (reason, versions, paired statistics) are written."""
    metrics_file: Path = Path("metrics/promotion.json")
    """The decision as numbers: promoted, tested, delta, p (a small, flat DVC metrics file)."""
