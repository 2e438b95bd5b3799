"""Typed sections of ``params.yaml``: what each pipeline stage reads, and nothing more.

``params.yaml`` holds shared sections (``env``, ``prior``, ``smc``) and one section per stage
(``collect``, ``dataset``, ``train``, ``evaluate``, ``promote``, ``report``). ``dvc.yaml`` lists,
per stage, exactly the keys below that the stage reads, so changing ``train.lr`` reruns only
``train`` and what follows. Every stage validates its own section here (typos are errors) and
builds a :class:`~amc.config.RunConfig` for the runner where it runs agents.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from amc.config import (
    EnvConfig,
    Frozen,
    PriorConfig,
    SMCConfig,
    ValueConfig,
    apply_overrides,
    load_yaml,
    validate,
)

PARAMS_FILE = Path("params.yaml")


class CollectParams(Frozen):
    """``collect``: prior rollouts on the train split (Best-of-G, never resampled)."""

    split: str = "train"
    """Task split to collect on."""
    max_tasks: int | None = Field(None, ge=1)
    """Only the first max_tasks tasks of the split (None = all)."""
    rollouts: int = Field(8, ge=1)
    """G, independent prior rollouts per task."""
    seeds: tuple[int, ...] = (0,)
    """Run seeds; each seed adds G more rollouts per task."""
    max_concurrent_tasks: int = Field(4, ge=1)
    """Tasks in flight at once."""
    max_concurrent_particles: int = Field(16, ge=1)
    """Particle steps in flight at once, across tasks."""
    out_dir: Path = Path("data/trajectories")
    """Where the per-seed JSON-lines trajectory files and manifest.json go."""


class EvaluateParams(Frozen):
    """``evaluate``: every method over an N grid and several seeds on the test split."""

    split: str = "test"
    """Task split to evaluate on."""
    max_tasks: int | None = Field(None, ge=1)
    """Only the first max_tasks tasks of the split (None = all)."""
    methods: tuple[Literal["react", "bon", "smc", "amc"], ...] = ("react", "bon", "smc", "amc")
    """react (N=1), bon (Best-of-N), smc (zero-shot value), amc (SMC + learned challenger)."""
    n_grid: tuple[int, ...] = (2, 4, 8)
    """Particle counts N of bon/smc/amc (react always has N=1)."""
    seeds: tuple[int, ...] = (0, 1)
    """Run seeds; every method runs every seed on the same tasks."""
    zero_shot_value: ValueConfig = ValueConfig(name="none")
    """Value of the plain smc method (none = reward-so-far twist; zero-shot = LLM judge)."""
    smc_n_grid: tuple[int, ...] | None = None
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
    """Where per-(method, seed) results are written."""
    metrics_file: Path = Path("metrics/eval.json")
    """The evaluation manifest + per-method summary (a DVC metrics file)."""

    @model_validator(mode="after")
    def _smc_n_in_grid(self) -> EvaluateParams:
        extra = sorted(set(self.smc_n_grid or ()) - set(self.n_grid))
        if extra:
            raise ValueError(f"evaluate.smc_n_grid {extra} not in evaluate.n_grid "
                             f"{list(self.n_grid)}")
        return self


class PromoteParams(Frozen):
    """``promote``: champion/challenger gate on the same evaluation."""

    metric: Literal["selected_reward", "oracle_best", "weighted_mean_reward", "success"] = (
        "selected_reward")
    """Primary metric (default: reward-free selection; oracle_best is always recorded too)."""
    n: int | None = Field(None, ge=1)
    """Compare at this N (None = the largest N of evaluate.n_grid)."""
    min_se: float = Field(1.0, ge=0)
    """Promote when mean paired improvement > min_se * its standard error."""
    alias: str = "champion"
    """Registry alias that marks the deployed model."""
    out_file: Path = Path("metrics/promotion.json")
    """Where the decision and its evidence are written (a DVC metrics file)."""


class ReportParams(Frozen):
    """``report``: plots and the per-method summary."""

    plots_dir: Path = Path("plots")
    """Where PNGs and DVC plot JSON files go."""
    summary_file: Path = Path("metrics/summary.json")
    """Per-method means and standard errors (a DVC metrics file)."""
    calibration_states: int = Field(200, ge=10)
    """At most this many (prefix, realised future reward) states for the calibration plot."""
    calibration_bins: int = Field(8, ge=2)
    """Bins of the reliability curve."""


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
    evaluate: EvaluateParams = EvaluateParams()
    """Evaluation."""
    promote: PromoteParams = PromoteParams()
    """Promotion gate."""
    report: ReportParams = ReportParams()
    """Reports and plots."""
    flows: FlowParams = FlowParams()
    """Prefect flow settings."""
    mlflow_uri: str | None = None
    """MLflow tracking URI (None: $MLFLOW_TRACKING_URI or sqlite:///mlruns/mlflow.db)."""


_SECTIONS = tuple(PipelineParams.model_fields)


def load_params(path: str | Path = PARAMS_FILE, overrides: list[str] | tuple[str, ...] = ()
                ) -> PipelineParams:
    """The pipeline sections of a params file (+ ``key=value`` overrides), validated."""
    data = apply_overrides(load_yaml(path), overrides)
    return validate(PipelineParams, {k: v for k, v in data.items() if k in _SECTIONS},
                    f"{path}")


def section(path: str | Path, name: str) -> dict[str, Any]:
    """A raw section of the params file (for stages whose model lives elsewhere)."""
    data = load_yaml(path)
    sec = data.get(name, {})
    if not isinstance(sec, dict):
        raise ValueError(f"{path}: section {name!r} is not a mapping")
    return sec


def model_name(p: PipelineParams) -> str:
    """Registry name of the environment's value model (``amc-value-<env>``)."""
    from amc.value.registry import registered_name

    return registered_name(p.env.name)
