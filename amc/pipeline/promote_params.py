"""Typed ``promote`` and ``drift`` sections of ``params.yaml``: the promotion gate's settings
and those of the drift check of the champion it promoted.

Read by :mod:`amc.pipeline.promote` (statistics in :mod:`amc.pipeline.gate_stats`) and the
drift monitor (:mod:`amc.monitor.drift`); part of :class:`amc.pipeline.params.PipelineParams`,
kept apart so the params module stays small.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from amc.config import Frozen

OfflineFigure = Literal["auc_within", "log_loss", "small_p_ratio", "doomed_mean",
                        "doomed_weight"]
"""The figures of :func:`amc.value.offline.offline_figures` the offline guard can use."""


class OfflineGuard(Frozen):
    """``promote.offline_guard``: veto a challenger whose value is worse than the champion's on
    an offline figure of held-out states (:mod:`amc.pipeline.guards`).

    Which figure. Rule: the figure that best predicts the sweep gain across issue 30's
    declared value candidates -- the one docs/evidence.md's "Which offline figure predicts the
    gain" table reports as determined (rho > 0 at exact permutation p <= 0.05) -- and, while
    none is determined, the documented default ``log_loss``: a proper score of the eventual
    success that punishes confident scores of lost states (the low end that steers small-beta
    SMC) and, unlike the doomed-state figures, needs no planner, so every benchmark can
    compute it. The section says which, if any, is determined now; switching the default
    is a decision for when it is (a change of this field, with the evidence cited).
    """

    figure: OfflineFigure = "log_loss"
    """The figure compared (module docstring of :mod:`amc.value.offline`; direction: higher
    is better for ``auc_within``, lower for the others). ``doomed_*`` need the benchmark's
    replayable planner (TextCraft); elsewhere the guard is not computable (see ``missing``)."""
    max_worse: float = Field(ge=0)
    """Veto when the challenger's figure is worse than the champion's by more than this (the
    figure's own units: AUC points, nats of log-loss, ...)."""
    missing: Literal["veto", "note"] = "veto"
    """When the figure cannot be computed for either model (no held-out states, no planner
    for a doomed mask, no state of a kind): veto = keep the champion, the reason says why;
    note = decide on the other evidence and say in the reason that the guard was not
    applied. Never a silent pass."""


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
    offline_guard: OfflineGuard | None = None
    """Guard on an offline figure of each value on the evaluation's held-out prior states
    (:class:`OfflineGuard`); None = off (decisions as without it)."""
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


class DriftParams(Frozen):
    """``drift``: the champion on fresh rollouts of the current prior vs its promotion record."""

    enabled: bool = True
    """Run the monitor in the scheduled evaluation (when a champion is registered)."""
    rollouts: int = Field(4, ge=1)
    """G fresh prior rollouts per task (method bon@G) for the calibration check."""
    seed_base: int = Field(100_000, ge=0)
    """Check k runs seeds seed_base + k * seeds_per_check ...: never an evaluation's seeds."""
    seeds_per_check: int = Field(1, ge=1)
    """Fresh seeds per check (each adds G rollouts and one champion run per task)."""
    max_calibration_increase: float = Field(0.1, ge=0)
    """Drift when the champion's calibration error (MAE) grew by more than this since
    promotion (reward units)."""
    max_bias_shift: float = Field(0.05, ge=0)
    """Drift when the magnitude of the bias (mean predicted - realised future reward) grew by
    more than this since promotion (|now| - |then|; a bias moving toward 0 never flags)."""
    max_success_drop: float = Field(0.2, ge=0)
    """Drift when the champion's success fell by more than this since promotion."""
    max_gain_drop: float = Field(0.1, ge=0)
    """Drift when the champion's AMC gain over Best-of-N (success of smc@N+champion minus
    bon@N on the check's fresh seeds) fell by more than this below its gain at promotion
    (tag ``baseline.gain``; success units)."""
    level: float | None = Field(0.05, gt=0, lt=1)
    """False-alarm level of one check on an unchanged prior: a worsening past its threshold
    flags only when it also exceeds z standard errors of the change (z at level / 4, one-sided:
    four criteria); None: the point thresholds alone."""
    calibration_states: int = Field(200, ge=10)
    """At most this many (state, realised future reward) pairs per check."""
    trigger: str | None = "amc-retrain-and-promote/retrain-and-promote"
    """Prefect deployment run on drift (flow/deployment name; None: only mark the drift)."""
    out_dir: Path = Path("data/drift")
    """Checks: check-<k>/ results and drift.json, plus history.jsonl (one line per check)."""
