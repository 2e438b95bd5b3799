"""The typed ``sweeps/params.yaml``: one sweep cell, and the learned value it may use.

A cell is one configuration of the comparison AMC vs Best-of-N at equal N. Task split:
TextCraft's generated split has ``train`` and ``test`` only, so ``val_tasks`` tasks of ``train``
(a seeded random sample; the id tail in cells recorded before issue 30) form the validation
split (settings are chosen there) and the learned value trains on the rest; reports use
``test``. The step budget of a task is its optimal plan's length plus
``slack`` (TextCraft plans differ in length, so a schedule "every k steps" is written per task).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from amc.config import Frozen, load_yaml
from amc.value.ranking import ObjectiveConfig

PARAMS_FILE = Path("params.yaml")


class CellParams(Frozen):
    """One sweep cell: prior skill, target, schedule, particles, value, budget and tasks."""

    benchmark: Literal["textcraft", "webshop", "sciworld"] = "textcraft"
    """The environment of the cell (:mod:`studies.sweeps.bench`: its suite, planner and budget)."""
    budget: int | None = Field(None, ge=1)
    """One step budget for every task (None: the optimal plan's length + slack, TextCraft
    only). WebShop and SciWorld cells need it: a fixed budget per benchmark configuration, so
    the budget shown to a value does not encode a task's plan length; a TextCraft cell has one
    depth, so its fixed budget is one per depth and says nothing of a task's plan."""
    catalog: str | None = None
    """WebShop catalog directory (None: the project's generated fixture catalog, written to
    ``work/webshop-fixture``)."""
    task_file: str | None = None
    """JSON ``{"train": [...], "test": [...]}`` of task ids replacing the suite's splits
    (SciWorld: the committed subset whose gold paths fit the budget)."""
    split: Literal["validation", "test"] = "test"
    """validation: val_tasks of the benchmark's train split (choose settings); test: report."""
    depth: int = Field(2, ge=1, le=4)
    """Crafting depth of the tasks (min = max depth)."""
    val_tasks: int = Field(116, ge=1)
    """Size of the validation split carved from the train split (116: the declared protocol's
    size for a paired interval within +-0.05, ``sweeps/protocol-issue30.yaml``)."""
    val_sample: Literal["random", "tail"] = "random"
    """random: a seeded random sample of the train tasks; tail: the last val_tasks of the list
    (every cell recorded before the key existed)."""
    val_seed: int = 0
    """Seed of the random validation sample (with the depth)."""
    max_tasks: int | None = Field(None, ge=1)
    """Only the first max_tasks tasks of the split (None = all)."""
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4, 5)
    """Run seeds; (task, seed) pairs = tasks x seeds."""
    q: float = Field(0.4, ge=0, le=1)
    """Skill of the planner-mix prior: probability of the optimal planner's next action."""
    beta: float = Field(0.25, gt=0)
    """KL coefficient: the target is prior * exp(R / beta)."""
    schedule: Literal["every", "fixed", "ess"] = "every"
    """every: resample after steps k, 2k, ...; fixed: after ``steps``; ess: when ESS < rho N."""
    every: int = Field(2, ge=1)
    """k of the ``every`` schedule."""
    steps: tuple[int, ...] = (2,)
    """Resampling steps of the ``fixed`` schedule (steps at or past the budget never act)."""
    rho: float = Field(0.5, gt=0, le=1)
    """ESS threshold of the ``ess`` schedule (checked after every step)."""
    n: int = Field(4, ge=1)
    """N, particles of AMC and of Best-of-N."""
    value: Literal["learned", "rollout", "none"] = "rollout"
    """AMC's value: learned V_theta, the Monte-Carlo upper bound, or none (zero twist)."""
    rollouts: int = Field(8, ge=1)
    """M, rollouts per state of the ``rollout`` value."""
    sharpen: float = Field(1.0, gt=0)
    """Exponent k of the learned value's success probability, p -> p^k, before the soft value
    (1 = as trained). At small beta the weights go as p, so k > 1 prunes low-value particles
    harder: a doomed state the regression head scores 0.09 beside a live one at 0.3 keeps
    (0.09 / 0.3)^k of the live one's weight. Chosen on validation cells like beta."""
    slack: int = Field(1, ge=0)
    """Step budget = optimal plan length + slack."""
    menu_form: bool = True
    """planner-mix writes its actions in the menu's own form (``get 9 ice`` twice, never an
    off-menu ``get 18 ice`` that marks a step as the planner's); the plan length of the budget
    is then the menu-form plan's. False: as every cell recorded before the key existed."""
    rollout_final: bool = True
    """The rollout value ends a rollout that uses up the budget with the environment's forced
    final action, as the driver ends a particle (WebShop's buy). False: as every cell recorded
    before the key existed (their WebShop rollouts stopped before the buy)."""
    value_map: Literal["soft", "fitted"] = "soft"
    """How a learned value's output enters the weights. soft: the calibrated success
    probability p (then ``sharpen``) through the soft value beta log(1 - p + p e^{1/beta});
    fitted: V = beta v / T, the head's output v over the resampling temperature T fitted on
    validation and stored with the model (``value.fit_temperature``), so siblings' weights go
    as exp((v_i - v_j) / T) -- what the product's learned value does with a fitted T."""
    value_model: str = "models/value"
    """Directory of the learned value (written by the ``value`` stage)."""
    replication: str | None = Field(None, pattern=r"^[a-z0-9][a-z0-9_.]*$")
    """A declared replication's own id (lower case, digits, ``_`` or ``.``): a test cell runs
    once (:mod:`studies.sweeps.once`); running it again needs a new id, which names its record
    ``<cell name>-rep-<id>``. None: the cell's first and only run."""
    evidence_dir: str = "../evidence/runs"
    """The committed cell records (relative to ``sweeps/``): where a test cell's earlier result
    is looked up before it runs."""
    out_file: str = "out/runs.json"
    """Per-(task, seed) rows of the cell (committed as evidence)."""
    metrics_file: str = "out/metrics.json"
    """The cell's summary (DVC metrics: ``dvc exp show``)."""
    tracking_uri: str | None = None
    """MLflow tracking URI (None: $MLFLOW_TRACKING_URI or sqlite:///mlruns/mlflow.db)."""
    experiment: str = "amc-sweeps"
    """MLflow experiment of the cells."""


class ValueParams(Frozen):
    """The learned V_theta of the sweep: data from planner-mix rollouts of train tasks."""

    q_grid: tuple[float, ...] = (0.2, 0.4, 0.6, 0.8)
    """Skills whose rollouts make the data (the sweep varies q; one value serves all)."""
    rollouts: int = Field(2, ge=1)
    """Prior rollouts per (train task, q)."""
    max_tasks: int | None = Field(None, ge=2)
    """Only the first max_tasks value-training tasks (None = all; toy runs and tests)."""
    slack: int = Field(1, ge=0)
    """Budget of the rollouts = plan length + slack (as the cells')."""
    menu_form: bool = True
    """planner-mix's actions in the menu's own form (as the cells' ``menu_form``)."""
    fixed_budget: int | None = Field(None, ge=1)
    """One budget for every rollout (as the cells' ``budget``); None: plan + slack."""
    sizes: tuple[int, ...] = (250, 500, 1000, 2000)
    """Training-set sizes (states) of the quality-vs-size curve."""
    history_k: int = Field(8, ge=0)
    """Most recent (state, action) pairs in the rendered state."""
    max_length: int = Field(96, ge=16)
    """Token budget of the encoder input."""
    show_budget: bool = False
    """Render ``[STEPS LEFT] k of T``; only with ``fixed_budget`` (a per-task budget of plan
    length + slack would tell the value the optimal plan's length of an unseen goal)."""
    epochs: int = Field(60, ge=1)
    """Head epochs (early stopping on validation Pearson)."""
    loss: Literal["mse", "bce"] = "mse"
    """mse: regression of the future reward; bce: a Bernoulli head (sigmoid, log-loss) for the
    binary success, the likelihood that fits the reward."""
    state_rollouts: int = Field(0, ge=0)
    """K more prior rollouts from every visited train/validation state; its target becomes
    the mean of the realised return and those K (:mod:`studies.sweeps.value_targets`)."""
    targets: Literal["return", "td"] = "return"
    """return: the (averaged) realised return; td: lambda-returns bootstrapped from a first
    head over each trajectory."""
    td_lambda: float = Field(0.8, ge=0, le=1)
    """lambda of the ``td`` targets (1 = the realised return)."""
    smc_states: bool = False
    """Also train on the states AMC (rollout value, ``smc_n`` particles) visits on the
    value-training tasks, with fresh-rollout targets."""
    smc_n: int = Field(4, ge=1)
    """Particles of the AMC runs whose states ``smc_states`` adds."""
    smc_beta: float = Field(0.05, gt=0)
    """beta of those AMC runs (their own, so a cell's beta does not retrain the value)."""
    smc_every: int = Field(2, ge=1)
    """Those AMC runs resample after steps k, 2k, ... (M = ``cell.rollouts`` rollouts)."""
    calibration: Literal["none", "platt", "isotonic", "power"] = "none"
    """Monotone map of p fitted on the value dataset's validation states against their binary
    outcome (:mod:`amc.value.calibration`), saved as ``calibration.json`` beside the model and
    applied by the cells before the soft value; power fits the old exponent by the same rule."""
    objective: ObjectiveConfig = ObjectiveConfig()
    """Head objective: plain regression (the default) or regression plus a within-(task, step)
    ranking / advantage term (:mod:`amc.value.ranking`; issue 50's value options)."""
    fit_temperature: bool = False
    """Fit the resampling temperature T on validation and store it with the model (read by
    cells with ``value_map: fitted``; :mod:`amc.value.temperature`)."""
    show_summary: bool = False
    """Render the observed-state summary in the value's NOW (TextCraft: the inventory the
    observations imply and what the goal's recipe still needs; issue 49). Every kept sweep
    value was trained without it."""
    seed: int = 0
    """Seed of rollouts, split and head."""
    work_dir: str = "work/value"
    """Trajectories, dataset and feature cache (not committed)."""
    out_dir: str = "models/value"
    """The trained model (the cells' value_model)."""
    quality_file: str = "out/value_quality.json"
    """Quality vs dataset size (committed as evidence)."""
    tracking_uri: str | None = None
    """MLflow tracking URI (None: the default)."""
    ceiling: bool = True
    """Score the held-out states with the Monte-Carlo rollout value too (the record's
    ``ceiling``). Off for SciWorld: each rollout there forks a JVM by a verified replay
    (seconds), so its ceiling is the declared rollout-value test cells instead."""

    @model_validator(mode="after")
    def _no_plan_length_shown(self) -> ValueParams:
        if self.show_budget and self.fixed_budget is None:
            raise ValueError("value.show_budget needs value.fixed_budget: a budget of plan "
                             "length + slack shown to the value encodes the optimal plan length")
        return self


LEGACY_CELL: dict[str, object] = {"val_sample": "tail", "menu_form": False,
                                  "rollout_final": False}
"""What a cell recorded before issue 30 meant by the keys it lacks (see :func:`recorded_cell`)."""


def recorded_cell(cell: dict[str, object]) -> CellParams:
    """The :class:`CellParams` of a committed record's ``cell`` (older records: their meaning)."""
    return CellParams.model_validate({**LEGACY_CELL, **cell})


WEBSHOP_VALUE_CELL = CellParams(benchmark="webshop", budget=6, val_tasks=48, rollouts=8)
"""The WebShop cells' split keys (studies.sweeps.grid's base) and the ceiling's M."""


SCIWORLD_VALUE_CELL = CellParams(benchmark="sciworld", budget=10, val_tasks=6, rollouts=4,
                                 task_file="sciworld_tasks.json")
"""The SciWorld cells' split keys (studies.sweeps.grid's base)."""


class BenchValueParams(Frozen):
    """A learned value of another benchmark's cells (sections ``value_webshop``,
    ``value_sciworld``): its own cell keys, so the cells' ``-S cell.*`` overrides never make it
    stale nor TextCraft's stale."""

    cell: CellParams = WEBSHOP_VALUE_CELL
    """Benchmark, fixed budget and validation sample of the cells it serves (the value trains
    on the train tasks outside that sample; ``rollouts`` = M of its rollout ceiling)."""
    value: ValueParams = ValueParams(
        q_grid=(0.3,), rollouts=24, max_length=384, work_dir="work/value-webshop",
        out_dir="models/value-webshop", quality_file="out/value_quality_webshop.json")
    """Its data and training (the rollouts' budget is ``cell.budget``: no plan length)."""


class SweepParams(Frozen):
    """``sweeps/params.yaml``."""

    cell: CellParams = CellParams()
    """The cell a ``dvc exp run -S cell.<key>=...`` runs."""
    value: ValueParams = ValueParams()
    """The learned value's training."""
    value_webshop: BenchValueParams = BenchValueParams()
    """WebShop's learned value (stage ``value_webshop``: ``models/value-webshop``)."""
    value_sciworld: BenchValueParams = BenchValueParams(
        cell=SCIWORLD_VALUE_CELL,
        value=ValueParams(q_grid=(0.3, 0.6), rollouts=8, max_length=384, ceiling=False,
                          sizes=(250, 500, 1000), work_dir="work/value-sciworld",
                          out_dir="models/value-sciworld",
                          quality_file="out/value_quality_sciworld.json"))
    """SciWorld's learned value (stage ``value_sciworld``: ``models/value-sciworld``)."""


def load_sweep_params(path: str | Path = PARAMS_FILE) -> SweepParams:
    """The validated params file (a clear error names a bad key)."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"no sweep params file at {p} (run from sweeps/)")
    return SweepParams.model_validate(load_yaml(p) or {})
