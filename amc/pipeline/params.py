"""Typed sections of ``params.yaml``: what each pipeline stage reads, and nothing more.

``params.yaml`` holds shared sections (``env``, ``prior``, ``smc``, ``rounds``) and one section
per stage (``collect``, ``dataset``, ``train``, ``evaluate``, ``promote``, ``report``).
``dvc.yaml`` lists, per stage, exactly the keys below that the stage reads, so changing
``train.lr`` reruns only ``train`` and what follows. :func:`load_params` is the one loader:
every stage's ``run(params)`` takes the validated :class:`PipelineParams` and reads its own
section of it.

Validation happens here, before any stage touches its outputs: typos in a section and bad
``env.options`` / ``prior.options`` (checked by the component's own options model) are errors.

Overrides (``-S key=value`` of ``amc <stage>`` or a Prefect flow's ``overrides``) are not
``params.yaml``, so their outputs must not land where ``dvc.lock`` expects the ``params.yaml``
ones: :func:`load_params` moves every output path of an overridden run under
``runs/overrides-<hash>/`` and registers its model as ``amc-value-<env>-<hash>``, never under the
default name (the same overrides map to the same folder: such runs resume). Overrides of
``flows`` (how a flow fans out, not what it computes) are not isolated.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from amc.config import (
    Distinct,
    EnvConfig,
    Frozen,
    PriorConfig,
    Seeds,
    SMCConfig,
    Steps,
    ValueConfig,
    apply_overrides,
    load_yaml,
    validate,
)
from amc.errors import user_message
from amc.pipeline.promote_params import DriftParams, PromoteParams
from amc.value.ranking import ObjectiveConfig

PARAMS_FILE = Path("params.yaml")
OVERRIDES_ROOT = Path("runs")


class CollectParams(Frozen):
    """``collect``: prior rollouts on the train split (Best-of-G, never resampled)."""

    split: str = "train"
    """Task split to collect on."""
    max_tasks: int | None = Field(None, ge=1)
    """Only the first max_tasks tasks of the split (None = all)."""
    rollouts: int = Field(8, ge=1)
    """G, independent prior rollouts per task."""
    seeds: Seeds = (0,)
    """Run seeds; each seed adds G more rollouts per task."""
    max_concurrent_tasks: int = Field(4, ge=1)
    """Tasks in flight at once."""
    max_concurrent_particles: int = Field(16, ge=1)
    """Particle steps in flight at once, across tasks."""
    out_dir: Path = Path("data/trajectories")
    """Where the per-seed JSON-lines trajectory files and manifest.json go."""
    exclude_tasks_files: tuple[Path, ...] = ()
    """Held-out task sets never collected (a test set declared before its runs, so no value is
    trained on its tasks): JSON files with ``tasks``; one that names ``env`` (``name`` and
    ``identity``, :func:`amc.pipeline.collect.task_identity`) applies to that environment and
    identity only. Their tasks leave the split before ``max_tasks`` applies."""


class DatasetParams(Frozen):
    """``dataset``: value-regression rows (one per visited state) from the collected rollouts."""

    gamma: float = Field(1.0, gt=0, le=1)
    """Discount of future rewards in the regression target (paper: 1)."""
    keep: Literal["all", "best"] = "all"
    """Rollouts per task: all (unbiased) or best (the paper)."""
    history_k: int = Field(20, ge=0)
    """K: most recent (state, action) pairs rendered into the model's input."""
    seed: int = 0
    """Seed of the train/validation split by task."""
    out_dir: Path = Path("data/dataset")
    """Where the dataset (HF arrow files, card, source.json) is written."""


class TrainParams(Frozen):
    """``train``: the value model V_theta (MiniLM-L6 by default), registered as challenger."""

    epochs: int = Field(1, ge=1)
    """Maximum epochs."""
    lr: float = Field(5e-5, gt=0)
    """Peak learning rate."""
    batch_size: int = Field(16, ge=1)
    """Rows per optimiser step."""
    seed: int = 0
    """Seed of initialisation and shuffling."""
    max_length: int = Field(128, ge=8)
    """Tokens per rendered state (longer inputs keep their end)."""
    num_layers: int | None = Field(None, ge=1)
    """Keep only the first layers of the backbone (None = all)."""
    patience: int = Field(1, ge=0)
    """Early stopping: epochs without validation improvement."""
    mode: Literal["full", "head"] = "full"
    """full: fine-tune the encoder and head (default); head: frozen encoder, cached features,
    only the head trains (the value options below need it)."""
    objective: ObjectiveConfig = ObjectiveConfig()
    """Head mode: plain regression (default) or regression plus a within-(task, step) ranking
    or advantage term (:mod:`amc.value.ranking`)."""
    fit_temperature: bool = False
    """Head mode: fit the resampling temperature on validation, stored with the model
    (:mod:`amc.value.temperature`)."""
    model_name: str | None = None
    """Registry name (None: amc-value-<env.name>; overridden runs get their own name)."""
    out_dir: Path = Path("models/value")
    """Where the trained model directory is saved."""
    metrics_file: Path = Path("metrics/train.json")
    """Best-epoch validation metrics (a small, flat DVC metrics file)."""


class EvaluateParams(Frozen):
    """``evaluate``: every method over an N grid and several seeds on the test split."""

    split: str = "test"
    """Task split to evaluate on."""
    max_tasks: int | None = Field(None, ge=1)
    """Only the first max_tasks tasks of the split (None = all)."""
    tasks_file: Path | None = None
    """A declared test set (JSON with ``tasks``, e.g. one of ``collect.exclude_tasks_files``):
    evaluate exactly its tasks, in its order (split and max_tasks then do not apply). None: the
    split."""
    block_tasks: int | None = Field(None, ge=1)
    """Paired blocks: run seed by seed, this many tasks at a time, every method on a block
    before the next, so an evaluation stopped midway leaves paired results (None: method by
    method over all tasks, the runner's order)."""
    methods: Annotated[tuple[Literal["react", "bon", "smc", "amc"], ...], Distinct,
                       Field(min_length=1)] = ("react", "bon", "smc", "amc")
    """react (N=1), bon (Best-of-N), smc (zero-shot value), amc (SMC + learned challenger)."""
    n_grid: Annotated[Steps, Distinct] = (2, 4, 8)
    """Particle counts N of bon/smc/amc (react always has N=1)."""
    seeds: Seeds = (0, 1)
    """Run seeds; every method runs every seed on the same tasks."""
    zero_shot_value: ValueConfig = ValueConfig(name="none")
    """Value of the plain smc method (none = reward-so-far twist; zero-shot = LLM judge)."""
    smc_n_grid: Annotated[Steps, Distinct] | None = None
    """N values of the plain smc method (None = every N of n_grid; e.g. [15] for zero-shot)."""
    learned_value: str = "learned"
    """Value registry name that loads a model URI (option model_uri) for amc/champion."""
    challenger: str | None = None
    """Value model URI of amc (None: models:/amc-value-<env>@challenger from the registry)."""
    compare_champion: bool = True
    """Also evaluate the current champion (smc+champion) on the same tasks/N/seeds."""
    max_concurrent_tasks: int = Field(4, ge=1)
    """Tasks in flight at once."""
    max_concurrent_particles: int = Field(16, ge=1)
    """Particle steps in flight at once, across tasks."""
    out_dir: Path = Path("data/eval")
    """Where per-(method, seed) results, plan.json and evaluation.json (the full record) go."""
    metrics_file: Path = Path("metrics/eval.json")
    """Per-method success, oracle, deployable and max-weight reward (a flat DVC metrics file)."""
    selection_value: str | None = None
    """Value that picks every method's deployable answer from its pool: challenger, champion
    or the zero-shot value's name; None = no deployable selection (its metrics are NaN)."""

    @model_validator(mode="after")
    def _smc_n_in_grid(self) -> EvaluateParams:
        for key, grid, kinds in (("n_grid", self.n_grid, {"bon", "smc", "amc"}),
                                 ("smc_n_grid", self.smc_n_grid, {"smc"})):
            if grid == () and kinds & set(self.methods):  # the method would silently not run
                raise ValueError(f"evaluate.{key}: empty, so {sorted(kinds & set(self.methods))}"
                                 " of evaluate.methods would not run: list an N")
        extra = sorted(set(self.smc_n_grid or ()) - set(self.n_grid))
        if extra:
            raise ValueError(f"evaluate.smc_n_grid {extra} not in evaluate.n_grid "
                             f"{list(self.n_grid)}")
        if self.selection_value in ("challenger", "champion") and "amc" not in self.methods:
            raise ValueError(f"evaluate.selection_value {self.selection_value!r} needs method "
                             "amc in evaluate.methods (it loads the learned value)")
        return self


class ReportParams(Frozen):
    """``report``: plots and the per-method summary."""

    plots_dir: Path = Path("plots")
    """Where PNGs and DVC plot JSON files go."""
    summary_file: Path = Path("data/report/summary.json")
    """Per-method means, standard errors, calibration, settings (read by amc results-doc)."""
    calibration_states: int = Field(200, ge=10)
    """At most this many (prefix, realised future reward) states for the calibration plot."""
    calibration_bins: int = Field(8, ge=2)
    """Bins of the reliability curve."""


class RoundsParams(Frozen):
    """``rounds``: retraining as numbered rounds of fresh rollouts (:mod:`amc.pipeline.rounds`)."""

    enabled: bool = False
    """True: collect writes round ``r`` into ``<collect.out_dir>/round-<r>/`` with its own seeds."""
    window: int | None = Field(None, ge=1)
    """Train on the last ``window`` rounds (None = every round so far)."""
    seed_stride: int = Field(1000, ge=1)
    """Seed block size: a round collects ``base + s`` for s in collect.seeds (< stride), base the
    first multiple of the stride past every seed used before (amc.pipeline.rounds)."""
    ledger_dir: Path = Path("data/rounds")
    """One ``round-<r>.json`` per round: seeds, prior identity, each step's result, status."""
    restore_tol: float = Field(1e-6, ge=0.0)
    """Largest |difference| in a validation metric (Pearson, AUC, MAE) a version retrained by a
    fresh sitting's restore may show from its ledger record; CPU training is deterministic on one
    machine only (a study restoring its rounds' registry reads it)."""


class FlowParams(Frozen):
    """``flows``: how the Prefect flows fan out (not read by any DVC stage)."""

    task_runner: Literal["thread", "dask"] = "thread"
    """thread = ThreadPoolTaskRunner; dask = prefect-dask DaskTaskRunner (the scale extra)."""
    max_workers: int = Field(2, ge=1)
    """Thread-pool workers, or local Dask workers when no address is given."""
    dask_address: str | None = None
    """Address of an existing Dask scheduler (tcp://host:8786); None = a local cluster."""
    dask_processes: bool = True
    """Local Dask cluster with worker processes (True) or threads (False)."""
    collect_shards: int = Field(2, ge=1)
    """Collect fans out over this many task shards (one Prefect task each)."""
    retrain_cron: str = "0 3 * * 1"
    """Schedule of the retrain_and_promote deployment (default: Mondays 03:00)."""
    evaluate_cron: str = "0 4 * * *"
    """Schedule of the evaluate deployment (default: daily 04:00)."""
    timezone: str = "UTC"
    """IANA time zone both crons are read in (e.g. Europe/Paris; default UTC)."""


class PipelineParams(Frozen):
    """The sections of ``params.yaml`` the pipeline stages read (others are ignored)."""

    env: EnvConfig = EnvConfig()
    """The benchmark."""
    prior: PriorConfig = PriorConfig()
    """The black-box agent."""
    smc: SMCConfig = SMCConfig()
    """Driver settings shared by collect and evaluate (N comes from each stage)."""
    collect: CollectParams = CollectParams()
    """Trajectory collection."""
    dataset: DatasetParams = DatasetParams()
    """Value dataset."""
    train: TrainParams = TrainParams()
    """Value-model training."""
    evaluate: EvaluateParams = EvaluateParams()
    """Evaluation."""
    promote: PromoteParams = PromoteParams()
    """Promotion gate."""
    report: ReportParams = ReportParams()
    """Reports and plots."""
    drift: DriftParams = DriftParams()
    """Drift monitor of the scheduled evaluation."""
    rounds: RoundsParams = RoundsParams()
    """Rounds of fresh rollouts (off: one collection in collect.out_dir)."""
    flows: FlowParams = FlowParams()
    """Prefect flow settings."""
    mlflow_uri: str | None = None
    """MLflow tracking URI (None: $MLFLOW_TRACKING_URI or sqlite:///mlruns/mlflow.db); a
    database (``sqlite:///...``) or a tracking server (``http(s)://...``): the stages register
    models, which MLflow's file store cannot."""

    @field_validator("mlflow_uri")
    @classmethod
    def _a_store_with_a_registry(cls, uri: str | None) -> str | None:
        if uri is not None and (uri.startswith("file:") or "://" not in uri):
            raise ValueError(f"{uri!r} is a file store, which cannot hold the model registry "
                             "(and MLflow refuses it): use sqlite:///<folder>/mlflow.db")
        return uri

    def model_value(self, uri: str) -> ValueConfig:
        """The ``evaluate.learned_value`` of model ``uri``, whose ``models:/`` URIs resolve in
        this pipeline's store (``mlflow_uri``), the one the train stage registered them in --
        not whatever ``$MLFLOW_TRACKING_URI`` says."""
        extra = {"tracking_uri": self.mlflow_uri} if self.mlflow_uri else {}
        return ValueConfig(name=self.evaluate.learned_value, options={"model": uri, **extra})

    @model_validator(mode="after")
    def _default_promote_metric(self) -> PipelineParams:
        """``promote.metric: null`` -> the deployable metric when there is a selection value."""
        if self.promote.metric is None:
            metric = "deployable_reward" if self.evaluate.selection_value else "oracle_best"
            # a derived default of a frozen model: set once, here, before anyone reads it
            object.__setattr__(self, "promote", self.promote.model_copy(update={"metric": metric}))
        elif "deployable" in self.promote.metric and self.evaluate.selection_value is None:
            raise ValueError(f"promote.metric: {self.promote.metric} needs "
                             "evaluate.selection_value (otherwise it is not measured)")
        late = self.smc.unreachable_resample_steps()
        if late and {"smc", "amc"} & set(self.evaluate.methods):  # refused now, not mid-stage
            raise ValueError(f"smc.resample_steps: {late} not before smc.max_steps = "
                             f"{self.smc.max_steps}: evaluate's smc/amc would equal Best-of-N")
        return self


_SECTIONS = tuple(PipelineParams.model_fields)
_OUTPUTS = (("collect", "out_dir"), ("dataset", "out_dir"), ("train", "out_dir"),
            ("train", "metrics_file"), ("evaluate", "out_dir"), ("evaluate", "metrics_file"),
            ("promote", "out_file"), ("promote", "metrics_file"), ("promote", "frozen_set"),
            ("report", "plots_dir"), ("report", "summary_file"), ("drift", "out_dir"),
            ("rounds", "ledger_dir"))
"""Every output path of the pipeline, as (section, field)."""


def load_params(path: str | Path = PARAMS_FILE, overrides: Sequence[str] = ()
                ) -> PipelineParams:
    """The pipeline sections of a params file (+ ``key=value`` overrides), validated.

    Component options are checked too, so a stage fails here, before touching any output; an
    error starts with the key to fix (``collect.seeds: ...``, ``prior.options: ...``).
    Overrides outside ``flows.`` isolate the run (:func:`isolate`).
    """
    data = apply_overrides(load_yaml(path), overrides)
    p = validate(PipelineParams, {k: v for k, v in data.items() if k in _SECTIONS}, "")
    check_components(p)
    tag = overrides_tag(overrides)
    return isolate(p, tag) if tag else p


def check_components(p: PipelineParams) -> None:
    """Validate env, prior and zero-shot value options against their registered models (an
    error names the key: ``prior.name: unknown prior ...``, ``prior.options: ...``)."""
    from amc.registry import ENVIRONMENTS, PRIORS, VALUES, UnknownNameError

    for key, reg, c in (("env", ENVIRONMENTS, p.env), ("prior", PRIORS, p.prior),
                        ("evaluate.zero_shot_value", VALUES, p.evaluate.zero_shot_value)):
        try:
            reg.validate(c.name, c.options)
        except (UnknownNameError, ValueError) as err:
            part = "name" if isinstance(err, UnknownNameError) else "options"
            raise ValueError(f"{key}.{part}: {user_message(err)}") from None


def overrides_tag(overrides: Sequence[str]) -> str | None:
    """``overrides-<8 hex>`` for overrides that change results (None: none, or flows.* only)."""
    relevant = sorted(o.strip() for o in overrides if not o.strip().startswith("flows."))
    digest = hashlib.sha256(json.dumps(relevant).encode()).hexdigest()[:8]
    return f"overrides-{digest}" if relevant else None


def isolate(p: PipelineParams, tag: str) -> PipelineParams:
    """``p`` with every output under ``runs/<tag>/`` and its own registry model name."""
    updates: dict[str, dict[str, Any]] = {}
    for sec, field in _OUTPUTS:
        updates.setdefault(sec, {})[field] = OVERRIDES_ROOT / tag / getattr(getattr(p, sec),
                                                                           field)
    default = default_model_name(p.env.name)
    if p.train.model_name in (None, default):
        updates["train"]["model_name"] = f"{default}-{tag[len('overrides-'):]}"
    return p.model_copy(update={sec: getattr(p, sec).model_copy(update=u)
                                for sec, u in updates.items()})


def default_model_name(env: str) -> str:
    """Registry name of an environment's value model for ``params.yaml`` runs."""
    from amc.value.registry import registered_name

    return registered_name(env)


def model_name(p: PipelineParams) -> str:
    """Registry name of the run's value model (``train.model_name`` or ``amc-value-<env>``)."""
    return p.train.model_name or default_model_name(p.env.name)


def stage_main(run: Any, argv: Sequence[str] | None = None) -> None:
    """Entry of ``python -m amc.pipeline.<stage> [params.yaml]``: load, run, one-line errors."""
    import sys

    from amc.errors import USER_ERRORS
    from amc.progress import quiet_libraries

    quiet_libraries()  # the stage's own lines and bars only
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) > 1 or (args and args[0].startswith("-")):
        raise SystemExit("usage: python -m amc.pipeline.<stage> [params.yaml]")
    try:
        run(load_params(args[0] if args else PARAMS_FILE))
    except USER_ERRORS as err:
        print(f"error: {user_message(err)}", file=sys.stderr)
        raise SystemExit(2) from None
