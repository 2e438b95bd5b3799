"""The sweep's DVC stage: one cell = Best-of-N and AMC at equal N on the same (task, seed) pairs.

For every task of the cell's split and every seed, the stage runs ``bon@N`` (the prior's N
independent rollouts) and ``smc@N`` with the cell's value through the ordinary driver
(:func:`amc.smc.sampler.run_task`, the configurations :func:`parse_method` makes), with the
``planner-mix`` prior at skill q on TextCraft (binary reward, depth ``depth``), its actions in the
menu's own form (``menu_form``). The task's step budget is its optimal plan's length + ``slack``
(or one fixed ``budget`` for the cell's depth); the ``rollout`` value's horizon is that budget.

Outputs (paths relative to ``sweeps/``): ``out/runs.json`` -- the cell's parameters and one row
per (task, seed) with both methods' task metrics and prior calls/tokens (the evidence that is
committed) -- and ``out/metrics.json`` (paired differences, for ``dvc exp show``); the same
parameters and metrics go to one MLflow run. Run as
``python -m studies.sweeps.cell`` in ``sweeps/``.
"""

from __future__ import annotations

import asyncio
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from amc.config import SMCConfig, ValueConfig
from amc.priors.planner_mix import PlannerMixOptions, PlannerMixPrior, load_planner
from amc.results import dumps
from amc.smc.methods import parse_method
from amc.smc.sampler import run_task
from amc.value.digest import model_hash
from amc.value.rollout import RolloutValue, RolloutValueOptions
from amc.value.simple import ZeroValue
from studies.sweeps.bench import bench_budget, make_bench_suite
from studies.sweeps.config import CellParams, load_sweep_params
from studies.sweeps.hidden import hidden_metrics
from studies.sweeps.once import REPLICATION_TAG, AlreadyRun, check_once
from studies.sweeps.stats import paired
from studies.sweeps.tasks import split_tasks

CALIBRATION_FILE = "calibration.json"
"""The value's fitted calibration in its model directory (:mod:`amc.value.calibration`)."""
SPLIT_FILE = "sweep_split.json"
"""A non-TextCraft value's record of the split it was trained outside (:func:`split_record`)."""
SPLIT_KEYS = ("benchmark", "budget", "catalog", "task_file", "depth", "val_tasks", "val_sample",
              "val_seed")
"""The cell keys that fix a benchmark's tasks, validation sample and budget."""
METRICS = ("oracle_best", "deployable_reward", "max_weight_reward", "weighted_mean_reward",
           "max_weight_masked_reward", "mode_reward", "success")
"""Task metrics summarised per cell (whatever else run_task reports is kept in the rows)."""


def smc_config(cell: CellParams, budget: int) -> SMCConfig:
    """AMC's driver settings for one task's budget (Best-of-N derives from them)."""
    if cell.schedule == "every":
        sched: dict[str, Any] = {"resample": "fixed",
                                 "resample_steps": tuple(range(cell.every, budget, cell.every))}
    elif cell.schedule == "fixed":
        sched = {"resample": "fixed", "resample_steps": cell.steps}
    else:
        sched = {"resample": "ess", "ess_threshold": cell.rho, "resample_steps": ()}
    return SMCConfig(n_particles=cell.n, max_steps=budget, beta=cell.beta, **sched)


class SoftBinaryValue:
    """The soft value of a binary future reward from a success-probability value model.

    V_theta regresses the realised future reward, i.e. estimates the probability p(s) of
    success from s (binary reward). The twist SMC needs is the soft value
    f(s) = beta log E[exp(R / beta)] = beta log(1 - p + p e^{1/beta}) -- the quantity the
    ``rollout`` value estimates -- so both values enter the weights on the same scale.
    ``calibration`` (fitted on validation states, saved with the model) maps p first, then
    ``sharpen`` = k replaces p by p^k (:attr:`CellParams.sharpen`; 1 = the soft value).
    WebShop's value regresses the graded score's mean p; the same map then treats p as a
    success probability, which for a reward in [0, 1] of mean p bounds the soft value from
    above (E exp(R / beta) <= 1 - p + p e^{1/beta} by convexity).
    """

    def __init__(self, inner: Any, beta: float, sharpen: float = 1.0,
                 calibration: Any = None) -> None:
        self.inner, self.beta, self.sharpen = inner, beta, sharpen
        self.calibration = calibration

    async def score(self, histories: Any) -> list[float]:
        p = np.clip(np.asarray(await self.inner.score(histories), float), 0.0, 1.0)
        if self.calibration is not None:
            p = np.clip(self.calibration(p), 0.0, 1.0)
        p = p ** self.sharpen
        return [float(v) for v in self.beta * np.logaddexp(np.log1p(-p + 1e-12),
                                                            np.log(p + 1e-12) + 1 / self.beta)]

    async def aclose(self) -> None:
        await self.inner.aclose()


class ValueFactory:
    """AMC's value for a task budget: one per budget for ``rollout``, shared otherwise."""

    def __init__(self, cell: CellParams, suite: Any, prior: PlannerMixPrior) -> None:
        self.cell, self.suite, self.prior = cell, suite, prior
        self._by_budget: dict[int, Any] = {}
        self._shared: Any = None
        self.selection: Any = None  # the deployable answer's selector (learned cells only)
        if cell.value == "learned":
            from amc.value.scorers import LearnedValue

            self.selection = LearnedValue.load(cell.value_model, device="cpu", cache_size=65536)
            self._shared = (fitted_value(self.selection, cell) if cell.value_map == "fitted" else
                            SoftBinaryValue(self.selection, cell.beta, cell.sharpen,
                                            load_calibration(cell.value_model)))
        elif cell.value == "none":
            self._shared = ZeroValue()

    def __call__(self, budget: int) -> Any:
        if self._shared is not None:
            return self._shared
        if budget not in self._by_budget:
            self._by_budget[budget] = RolloutValue(self.suite, self.prior, self.cell.beta,
                                                   RolloutValueOptions(
                                                       n_rollouts=self.cell.rollouts,
                                                       max_steps=budget, seed=0,
                                                       final_action=self.cell.rollout_final))
        return self._by_budget[budget]


class ScaledValue:
    """A value times a constant: V = beta v / T of a fitted map (:func:`fitted_value`)."""

    def __init__(self, inner: Any, scale: float) -> None:
        self.inner, self.scale = inner, scale

    async def score(self, histories: Any) -> list[float]:
        return [float(v) * self.scale for v in await self.inner.score(histories)]

    async def aclose(self) -> None:
        await self.inner.aclose()


def fitted_value(learned: Any, cell: CellParams) -> ScaledValue:
    """The loaded learned value as V = beta v / T (``cell.value_map: fitted``): T is the
    resampling temperature the value stage fitted on validation and stored with the model; a
    model without one cannot be used so (a clear error, not a silent beta). It shares the
    model and its score cache with the cell's selection instead of loading it again."""
    t = (learned.meta.get("metrics") or {}).get("resample_temperature")
    if t is None:
        raise ValueError(f"cell.value_map fitted: {cell.value_model} stores no resampling "
                         "temperature (train it with value.fit_temperature: true)")
    return ScaledValue(learned, cell.beta / float(t))


def split_record(cell: CellParams) -> dict[str, Any]:
    """The cell keys of :data:`SPLIT_KEYS` (what a value stage writes as ``SPLIT_FILE``)."""
    return {k: getattr(cell, k) for k in SPLIT_KEYS}


def check_value_split(cell: CellParams) -> None:
    """A learned cell off TextCraft needs a value trained on its benchmark outside its own
    validation sample: the model directory's ``SPLIT_FILE`` must match the cell's split keys
    (TextCraft's value stage writes none; issue 30's cells use it as before)."""
    if cell.benchmark == "textcraft":
        return
    if cell.benchmark not in ("webshop", "sciworld"):
        raise ValueError(f"no learned value for {cell.benchmark} (value stages: textcraft, "
                         "webshop, sciworld): use value rollout or none")
    path = Path(cell.value_model) / SPLIT_FILE
    if not path.is_file():
        raise ValueError(f"{cell.value_model} is not a {cell.benchmark} value (no {SPLIT_FILE};"
                         f" the {cell.benchmark} value is models/value-{cell.benchmark}, stage "
                         f"value_{cell.benchmark})")
    have, want = json.loads(path.read_text()), split_record(cell)
    if have != want:
        diff = {k: (have.get(k), v) for k, v in want.items() if have.get(k) != v}
        raise ValueError(f"{cell.value_model} was trained for another split: (value, cell) "
                         f"{diff}")


def load_calibration(model_dir: str | Path) -> Any:
    """The model's fitted calibration (None when the value stage fitted none)."""
    from amc.value.calibration import Calibration

    path = Path(model_dir) / CALIBRATION_FILE
    return Calibration.from_dict(json.loads(path.read_text())) if path.is_file() else None


def method_row(res: Any, beta: float | None = None) -> dict[str, Any]:
    """What a row keeps of one method's task result (metrics, prior calls, tokens); with
    ``beta``, also the reward-free selections of :mod:`studies.sweeps.hidden`."""
    u = res.usage
    metrics = {k: float(v) for k, v in res.metrics.items()}
    if beta is not None:
        metrics.update(hidden_metrics(res, beta))
    return {"metrics": metrics, "calls": u.calls,
            "tokens": u.prompt_tokens + u.completion_tokens}


async def run_cell(cell: CellParams, progress: bool = False) -> list[dict[str, Any]]:
    """One row per (task, seed): Best-of-N and AMC at equal N, same seed (paired)."""
    if cell.value == "learned":
        check_value_split(cell)
    suite = make_bench_suite(cell)
    # menu_form rewrites TextCraft's planner actions (the other planners emit menu actions)
    menu_form = cell.menu_form and cell.benchmark == "textcraft"
    prior = PlannerMixPrior(suite, load_planner(cell.benchmark),
                            PlannerMixOptions(q=cell.q, menu_form=menu_form))
    hidden = None if cell.benchmark == "textcraft" else cell.beta  # reward-free selections
    values = ValueFactory(cell, suite, prior)
    rows = []
    tasks = split_tasks(suite, cell)
    for i, task in enumerate(tasks):
        budget = bench_budget(suite, cell, task)
        smc = smc_config(cell, budget)
        bon = parse_method(f"bon@{cell.n}", smc, ValueConfig()).smc
        amc = parse_method(f"smc@{cell.n}", smc, ValueConfig()).smc
        for seed in cell.seeds:
            r_bon = await run_task(suite=suite, prior=prior, value=ZeroValue(), task_id=task,
                                   smc=bon, seed=seed, method="bon", selection=values.selection)
            r_amc = await run_task(suite=suite, prior=prior, value=values(budget), task_id=task,
                                   smc=amc, seed=seed, method="amc", selection=values.selection)
            rows.append({"task_id": task, "seed": seed, "budget": budget,
                         "bon": method_row(r_bon, hidden), "amc": method_row(r_amc, hidden)})
        if progress:
            print(f"task {i + 1}/{len(tasks)}", file=sys.stderr, flush=True)
    await prior.aclose()
    return rows


def summarise(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Per metric: both means, the paired difference, its task s.e. and 95% bounds; calls."""
    tasks = [r["task_id"] for r in rows]
    out: dict[str, float] = {"pairs": float(len(rows)), "tasks": float(len(set(tasks)))}
    for m in METRICS:
        if not all(m in r[k]["metrics"] for r in rows for k in ("bon", "amc")):
            continue
        p = paired(tasks, [r["bon"]["metrics"][m] for r in rows],
                   [r["amc"]["metrics"][m] for r in rows])
        out.update({k: v for k, v in {
            f"{m}.bon": p.a, f"{m}.amc": p.b, f"{m}.diff": p.d.mean, f"{m}.se": p.d.se,
            f"{m}.lo": p.d.lo, f"{m}.hi": p.d.hi}.items() if math.isfinite(v)})  # NaN: unmeasured
    for k in ("bon", "amc"):
        out[f"calls.{k}"] = sum(r[k]["calls"] for r in rows) / max(len(rows), 1)
    return out


def log_mlflow(cell: CellParams, summary: dict[str, float]) -> str:
    """One MLflow run per cell: the cell's parameters and its summary; returns the run id."""
    import mlflow

    from amc.tracking import run_tags, setup_tracking

    setup_tracking(cell.tracking_uri, cell.experiment)
    params = cell.model_dump(exclude={"out_file", "metrics_file", "tracking_uri", "experiment"})
    with mlflow.start_run(run_name=cell_name(cell), tags=run_tags()) as run:
        mlflow.log_params({k: str(v) for k, v in params.items()})
        mlflow.log_metrics({k.replace(".", "_"): v for k, v in summary.items()})
        return run.info.run_id


def cell_name(cell: CellParams) -> str:
    """A readable, unique-per-configuration name (the evidence file's stem); a declared
    replication's ends with ``-rep-<id>`` (:mod:`studies.sweeps.once`)."""
    rep = f"{REPLICATION_TAG}{cell.replication}" if cell.replication else ""
    return _config_name(cell) + rep


def _config_name(cell: CellParams) -> str:
    sched = {"every": f"every{cell.every}", "ess": f"ess{cell.rho:g}",
             "fixed": "fixed" + "-".join(map(str, cell.steps))}[cell.schedule]
    if cell.benchmark != "textcraft":  # a fixed budget; no depth nor slack
        return (f"{cell.split}-{cell.benchmark}-B{cell.budget}-q{cell.q:g}-b{cell.beta:g}-"
                f"{sched}-n{cell.n}-{cell.value}-m{cell.rollouts}-seeds{len(cell.seeds)}"
                + (f"-t{cell.max_tasks}" if cell.max_tasks else "")
                # WebShop's ceiling with the forced buy; the cells before it keep their names
                + ("-ff" if cell.benchmark == "webshop" and cell.value == "rollout"
                   and cell.rollout_final else ""))
    return (f"{cell.split}-d{cell.depth}-q{cell.q:g}-b{cell.beta:g}-{sched}-n{cell.n}-"
            f"{cell.value}-s{cell.slack}-seeds{len(cell.seeds)}"
            + (f"-x{cell.sharpen:g}" if cell.sharpen != 1 else "")
            + ("-fitT" if cell.value_map == "fitted" else "")
            + ("-menu" if cell.menu_form else "")
            + (f"-v{cell.val_tasks}r{cell.val_seed}"
               if cell.split == "validation" and cell.val_sample == "random" else "")
            + (f"-B{cell.budget}" if cell.budget else "")
            + (f"-t{cell.max_tasks}" if cell.max_tasks else ""))


def dir_hash(path: str | Path) -> str:
    """Which V_theta a cell used: the content hash of the model's weights and configuration
    (:func:`amc.value.digest.model_hash`; run records such as wall times are left out, so a
    bit-identical retrain has the same hash)."""
    return model_hash(path)


def run(cell: CellParams, track: bool = True, progress: bool = False) -> dict[str, Any]:
    """Run a cell and write its rows and metrics; returns the written evidence record."""
    check_once(cell, cell_name(cell))  # before any work: a test cell's result is written once
    t0 = time.perf_counter()
    rows = asyncio.run(run_cell(cell, progress))
    summary = summarise(rows)
    record = {"name": cell_name(cell), "cell": cell.model_dump(mode="json"),
              "summary": summary, "rows": rows, "wall_s": round(time.perf_counter() - t0, 1)}
    if cell.value == "learned":
        record["value_model_hash"] = dir_hash(cell.value_model)
    if track:
        record["mlflow_run_id"] = log_mlflow(cell, summary)
    for path, obj in ((cell.out_file, record), (cell.metrics_file, summary)):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(dumps(obj, indent=1, sort_keys=True) + "\n")  # strict: NaN null
    return record


def main() -> None:
    cell = load_sweep_params().cell
    try:
        rec = run(cell, progress=True)
    except AlreadyRun as err:
        sys.exit(f"error: {err}")
    s = rec["summary"]
    print(f"{rec['name']}: Best-of-{cell.n} {s['oracle_best.bon']:.3f}, AMC "
          f"{s['oracle_best.amc']:.3f}, diff {s['oracle_best.diff']:+.3f} "
          f"[{s['oracle_best.lo']:+.3f}, {s['oracle_best.hi']:+.3f}]")


if __name__ == "__main__":
    main()
