"""Run methods over many tasks: components from config, concurrency, resume, failures, summaries.

:func:`run_methods` is the library function behind ``amc run`` and the pipeline's collect and
evaluate stages. It builds the environment suite, the prior and each method's value function
from the registries, runs every (method, seed) over the tasks with bounded concurrency, appends
each task's :class:`~amc.smc.records.TaskResult` as soon as it finishes, and skips tasks whose
results already exist (resume). When ``selection_value`` names a value, it is built once and
scores every method's pool post hoc (the deployable selection, :mod:`amc.smc.scoring`).
Summaries are means and standard errors over *tasks*, the seeds of a task averaged first
(:mod:`amc.stats`).

Failures are not results. A task whose run raised, or one of whose particles failed for good
(the agent's endpoint refused, or retries ran out: ``TaskResult.failures``), is appended to the
(method, seed)'s failures file with its error and left out of the results file, so the next
run retries it and a summary never averages a damaged score. The other tasks still finish;
:class:`RunOutcome` says which failed. A budget stop (``Budget``) is a deliberate end of
proposing, part of the method's configuration: its task is a result.
Nothing is written before the components are built (a refusal: :class:`ComponentError`) and
the run's size is within ``cfg.limits`` (:func:`check_limits`).
"""

from __future__ import annotations

import asyncio
import math
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from amc.config import MethodConfig, RunConfig, config_hash
from amc.errors import (
    ComponentError,
    LimitExceeded,
    ServiceUnavailable,
    mask_logs,
    register_secret_env,
)
from amc.priors.ledger import BUDGET_STOP
from amc.progress import progress_bar
from amc.protocols import EnvSuite, Prior, ValueFunction
from amc.registry import ENVIRONMENTS, PRIORS, VALUES
from amc.results import (
    append_jsonl,
    check_writable,
    failures_path,
    iter_task_records,
    lock_outputs,
    repair_tail,
    results_path,
    sort_task_records,
    timing_path,
    write_json_atomic,
    write_jsonl_atomic,
)
from amc.run_hash import _method_run_config, sample_hash, selection_config
from amc.smc.methods import parse_method
from amc.smc.records import TaskResult
from amc.smc.reselect import reselect
from amc.smc.sampler import run_task
from amc.smc.value_spread import spread_fields
from amc.stats import task_mean_se

METRICS = ("oracle_best", "deployable_reward", "max_weight_reward", "weighted_mean_reward",
           "success", "success_deployable")
"""Per-task metrics summarised per method (:mod:`amc.smc.scoring`)."""
LABELS = ("oracle best", "deployable", "max weight (uses R)", "weighted mean", "success",
          "success deployable")

_BUILD_LOCK = threading.Lock()
"""Serialises component building across threads (pipeline units run in a thread pool): a
value or prior importing transformers for the first time from two threads at once races
inside its lazy module (``cannot import name 'AutoConfig'``)."""


@dataclass
class RunOutcome:
    """What a run produced: results, and the tasks that failed, keyed ``method#seed``."""

    results: dict[str, list[TaskResult]] = field(default_factory=dict)
    """Finished tasks (resumed ones included), in task order."""
    failed: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Failure records of this run: ``{task_id, method, seed, error, failures}``."""

    @property
    def n_failed(self) -> int:
        return sum(len(v) for v in self.failed.values())


@dataclass
class Components:
    """The built components of a run (closed by :meth:`aclose`)."""

    suite: EnvSuite
    prior: Prior
    values: dict[str, ValueFunction]
    """One value function per distinct value config (keyed by its JSON)."""
    selection: ValueFunction | None = None
    """The deployable selection's value (one of ``values`` when configs coincide)."""

    async def aclose(self) -> None:
        for v in self.values.values():
            await v.aclose()
        if self.selection is not None and self.selection not in self.values.values():
            await self.selection.aclose()
        await self.prior.aclose()
        self.suite.close()


def resolve_methods(cfg: RunConfig) -> list[MethodConfig]:
    """Method specs of the run, resolved (fails early on a bad spec).

    ``+NAME`` also finds the run's default value by its registry name (``--value models:/...``
    sets ``value.name=learned``, so ``smc@15+learned`` means that model).
    """
    values = {cfg.value.name: cfg.value, **cfg.values}
    return [parse_method(m, cfg.smc, cfg.value, values) for m in cfg.methods]


def task_list(cfg: RunConfig, suite: EnvSuite) -> list[str]:
    """The run's task ids: explicit ids, or the split (truncated to max_tasks)."""
    ids = list(cfg.task_ids) if cfg.task_ids else suite.task_ids(cfg.split)
    return ids[: cfg.max_tasks] if cfg.max_tasks else ids


def build_components(cfg: RunConfig, methods: Sequence[MethodConfig]) -> Components:
    """Build the suite, the prior and one value function per distinct value config.

    One thread at a time (:data:`_BUILD_LOCK`): factories import heavy libraries lazily.
    """
    with _BUILD_LOCK:
        return _build(cfg, methods)


def _built(component: str, build: Any, *args: Any, **kwargs: Any) -> Any:
    """``build(*args, **kwargs)``; a refusal becomes a :class:`ComponentError` naming it."""
    try:
        return build(*args, **kwargs)
    except ServiceUnavailable:
        raise
    except (ValueError, KeyError, OSError) as err:
        raise ComponentError(component, err) from err


def _build(cfg: RunConfig, methods: Sequence[MethodConfig]) -> Components:
    for comp in (cfg.prior, cfg.value, *cfg.values.values(), *(m.value for m in methods)):
        register_secret_env(comp.options.get("api_key_env"))
    env_opts = _built("env", ENVIRONMENTS.validate, cfg.env.name, cfg.env.options)
    suite = _built("env", ENVIRONMENTS.build, cfg.env.name, cfg.env.options)
    ctx: dict[str, Any] = {"env_name": cfg.env.name, "env_options": env_opts}
    try:
        prior = _built("prior", PRIORS.build, cfg.prior.name, cfg.prior.options or None, **ctx)
        values: dict[str, ValueFunction] = {}
        for m in methods:
            key = m.value.model_dump_json()
            if key not in values:
                values[key] = _built("value", VALUES.build, m.value.name, m.value.options or None,
                                     beta=m.smc.beta, prior=prior, **ctx)
        sel_cfg = selection_config(cfg)
        selection = None if sel_cfg is None else values.get(sel_cfg.model_dump_json()) or \
            _built("selection_value", VALUES.build, sel_cfg.name, sel_cfg.options or None,
                   beta=cfg.smc.beta, prior=prior, **ctx)
    except BaseException:
        suite.close()
        raise
    return Components(suite, prior, values, selection)


def check_limits(cfg: RunConfig, methods: Sequence[MethodConfig], n_tasks: int) -> None:
    """Refuse a run past ``cfg.limits`` (each method's N; tasks x N x steps in all)."""
    lim, how = cfg.limits, "if this is meant, raise it with -S limits.{}=..."
    for m in methods:
        if m.smc.n_particles > lim.max_particles:
            raise LimitExceeded(f"{m.name}: N = {m.smc.n_particles} particles is over the "
                                f"limit limits.max_particles = {lim.max_particles}; "
                                + how.format("max_particles"), m.name)
    total = n_tasks * len(cfg.seeds) * sum(m.smc.n_particles * m.smc.max_steps for m in methods)
    if total > lim.max_particle_steps:
        raise LimitExceeded(f"{n_tasks} task(s) x {len(cfg.seeds)} seed(s) x N x max_steps "
                            f"summed over the methods is {total} particle steps, over the limit "
                            f"limits.max_particle_steps = {lim.max_particle_steps}; "
                            + how.format("max_particle_steps"))


class TasksFailed(RuntimeError):
    """Some tasks failed; the others finished. ``outcome`` holds both."""

    def __init__(self, outcome: RunOutcome) -> None:
        self.outcome = outcome
        key, recs = next(iter(outcome.failed.items()))
        total = outcome.n_failed + sum(len(v) for v in outcome.results.values())
        super().__init__(
            f"{outcome.n_failed} of {total} tasks failed (first: {key} task "
            f"{recs[0]['task_id']}: {recs[0]['error']}); they are listed in the "
            "*.failures.jsonl files and the next run retries them")


def task_failure(res: TaskResult) -> str | None:
    """Why a finished task is not a result (a particle failed for good), or ``None``."""
    errs = [str(f.get("error")) for f in res.failures
            if not str(f.get("error")).startswith(BUDGET_STOP)]
    if not errs:
        return None
    return f"{len(errs)} particle(s) failed for good; first: {errs[0]}"


async def refresh_selection(path: Path, run_hash: str, sample: str,
                            selection: ValueFunction | None, success_threshold: float) -> int:
    """Re-select a results file sampled under this configuration but selected by another value.

    Its records carry ``sample_hash`` (the configuration without the selection value, see
    :func:`sample_hash`): when that matches and ``config_hash`` does not, only the selection
    changed, so every record is re-scored (:func:`amc.smc.reselect.reselect`) and the file
    rewritten under ``run_hash`` instead of sampled again. Returns the records re-selected.
    """
    if not path.is_file():
        return 0
    repair_tail(path)
    recs = [rec for _, rec in iter_task_records(path)]
    if not recs or recs[0].get("config_hash") == run_hash \
            or any(r.get("sample_hash") != sample for r in recs):
        return 0
    new = [(await reselect(TaskResult.from_dict(r), selection, config_hash=run_hash,
                           success_threshold=success_threshold)).line(sample) for r in recs]
    write_jsonl_atomic(path, new)
    print(f"{path.name}: {len(new)} task(s) re-selected, their rollouts reused "
          "(only the selection value changed)", file=sys.stderr, flush=True)
    return len(new)


def load_done(path: Path, run_hash: str, sample: str | None = None) -> dict[str, TaskResult]:
    """Finished tasks of a results file (resume); a bad line or a repeated task: file:line.

    Records of failed tasks (written by older versions) are dropped from the file, so the
    task reruns and is never counted twice.
    """
    repair_tail(path)
    done: dict[str, TaskResult] = {}
    stale = False
    for line, rec in iter_task_records(path):
        if rec.get("config_hash") != run_hash:
            raise ValueError(f"{path} holds results of a different configuration; "
                             "use another out_dir or delete the file")
        try:
            res = TaskResult.from_dict(rec)
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            what = f"missing field {err.args[0]!r}" if isinstance(err, KeyError) else str(err)
            raise ValueError(f"{path}:{line}: bad results record ({what})") from None
        if task_failure(res) is None:
            done.setdefault(res.task_id, res)
        stale |= task_failure(res) is not None
    if stale:
        write_jsonl_atomic(path, [r.line(sample) for r in done.values()])
    return done


async def run_one_method(
    comps: Components,
    method: MethodConfig,
    tasks: Sequence[str],
    seed: int,
    out_dir: Path,
    *,
    run_hash: str,
    max_concurrent_tasks: int,
    particle_semaphore: asyncio.Semaphore,
    progress: bool = True,
    sample: str | None = None,
    label: str = "",
) -> tuple[list[TaskResult], list[dict[str, Any]]]:
    """Run one (method, seed) over ``tasks``, resuming; returns (results, failure records).

    ``sample``: the sampling hash (:func:`sample_hash`); results sampled alike but selected
    by another value are re-selected, not run again (:func:`refresh_selection`).
    """
    out_path = results_path(out_dir, method.name, seed)
    fail_path = failures_path(out_dir, method.name, seed)
    if sample is not None:
        await refresh_selection(out_path, run_hash, sample, comps.selection,
                                method.smc.success_threshold)
    done = load_done(out_path, run_hash, sample)
    fail_path.unlink(missing_ok=True)  # this run retries those tasks and records its own
    todo = [t for t in tasks if t not in done]
    value = comps.values[method.value.model_dump_json()]
    task_sem = asyncio.Semaphore(max_concurrent_tasks)
    failed: dict[str, dict[str, Any]] = {}
    bar = progress_bar(len(tasks), len(tasks) - len(todo), f"{label}{method.name} s{seed}",
                       enabled=progress)

    async def one(task_id: str) -> None:
        res: TaskResult | None = None
        async with task_sem:
            try:
                res = await run_task(suite=comps.suite, prior=comps.prior, value=value,
                                     task_id=task_id, smc=method.smc, seed=seed,
                                     method=method.name, config_hash=run_hash,
                                     semaphore=particle_semaphore, selection=comps.selection)
                error = task_failure(res)
            except Exception as err:  # the task failed; the others go on
                error = " ".join(f"{type(err).__name__}: {err}".split())
        if res is not None and error is None:
            append_jsonl(out_path, res.line(sample))
            append_jsonl(timing_path(out_dir, method.name, seed),
                         {"task_id": task_id, "wall_s": round(float(res.wall_s or 0.0), 3)})
            done[task_id] = res
        else:
            rec = {"task_id": task_id, "method": method.name, "seed": seed,
                   "config_hash": run_hash, "error": (error or "")[:1000],
                   "failures": [dict(f) for f in res.failures] if res is not None else []}
            append_jsonl(fail_path, rec)
            failed[task_id] = rec
        bar.update()

    try:
        await asyncio.gather(*(one(t) for t in todo))
    finally:
        bar.close()
    sort_task_records(out_path, tasks)  # lines in task order, whichever finished first
    return [done[t] for t in tasks if t in done], [failed[t] for t in tasks if t in failed]


async def run_methods(cfg: RunConfig, *, progress: bool = True,
                      raise_on_failure: bool = True) -> RunOutcome:
    """Run every (method, seed) of ``cfg``; results and failures keyed by ``method#seed``.

    The output folder is checked and every (method, seed) file locked before any work. Raises
    :class:`TasksFailed` after all units finished when some task failed, unless
    ``raise_on_failure`` is False (then the outcome says so).
    """
    mask_logs()
    methods = resolve_methods(cfg)
    comps = build_components(cfg, methods)  # a refusal here leaves nothing written
    try:
        tasks = task_list(cfg, comps.suite)
        if not tasks:
            raise ValueError(f"no tasks in split {cfg.split!r} of {cfg.env.name}")
        check_limits(cfg, methods, len(tasks))
        out_dir = check_writable(cfg.out_dir or ".")
        units = [(m, seed) for m in methods for seed in cfg.seeds]
        outcome = RunOutcome()
        with lock_outputs([results_path(out_dir, m.name, s) for m, s in units]):
            sem = asyncio.Semaphore(cfg.max_concurrent_particles)
            for i, (m, seed) in enumerate(units, 1):
                res, failed = await run_one_method(
                    comps, m, tasks, seed, out_dir, progress=progress,
                    run_hash=config_hash(_method_run_config(cfg, m)),
                    sample=sample_hash(cfg, m), label=f"[{i}/{len(units)}] ",
                    max_concurrent_tasks=cfg.max_concurrent_tasks, particle_semaphore=sem)
                outcome.results[f"{m.name}#{seed}"] = res
                if failed:
                    outcome.failed[f"{m.name}#{seed}"] = failed
    finally:
        await comps.aclose()
    if outcome.failed and raise_on_failure:
        raise TasksFailed(outcome)
    return outcome


def summarise(results: Mapping[str, Sequence[TaskResult]],
              failed: Mapping[str, Sequence[Mapping[str, Any]]] | None = None
              ) -> list[dict[str, Any]]:
    """Per-method rows: mean and s.e. over tasks (seeds averaged first) of each metric, and
    how often the value scored a group constant (:func:`~amc.smc.value_spread.spread_fields`).

    ``failed`` (keyed like ``results``) adds each method's count of failed (task, seed) runs;
    they are not in the means. A method whose every task failed still gets a row."""
    by_method: dict[str, list[TaskResult]] = {}
    n_failed: dict[str, int] = {}
    for key, rs in results.items():
        by_method.setdefault(key.rsplit("#", 1)[0], []).extend(rs)
    for key, fs in (failed or {}).items():
        name = key.rsplit("#", 1)[0]
        by_method.setdefault(name, [])
        n_failed[name] = n_failed.get(name, 0) + len(fs)
    rows = []
    for name, rs in by_method.items():
        row: dict[str, Any] = {"method": name, "tasks": len({r.task_id for r in rs}),
                               "runs": len(rs), "failed": n_failed.get(name, 0)}
        for k in METRICS:
            row[k], row[k + "_se"] = task_mean_se(
                [(r.task_id, r.metrics.get(k, math.nan)) for r in rs])
        row["tokens_per_task"] = sum(r.usage.total_tokens for r in rs) / max(len(rs), 1)
        row["cost_per_task"] = sum(r.usage.cost_usd for r in rs) / max(len(rs), 1)
        row["log_z"] = task_mean_se([(r.task_id, r.metrics["log_z"]) for r in rs])[0]
        rows.append({**row, **spread_fields(name, rs)})
    return rows


def write_summary(cfg: RunConfig, outcome: RunOutcome, wall_s: float) -> list[dict[str, Any]]:
    """``<out_dir>/summary.json`` of a run (config, :func:`summarise` rows, failed count, wall
    seconds) -- the file ``amc results-doc`` reads; returns the rows."""
    rows = summarise(outcome.results, outcome.failed)
    write_json_atomic(Path(cfg.out_dir or ".") / "summary.json",
                      {"config": cfg.model_dump(mode="json"), "methods": rows,
                       "failed_tasks": outcome.n_failed, "wall_s": round(wall_s, 3)})
    return rows

