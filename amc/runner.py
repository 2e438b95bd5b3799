"""Run methods over many tasks: components from config, concurrency, resume, summaries.

:func:`run_methods` is the library function behind ``amc run`` and the pipeline's collect and
evaluate stages. It builds the environment suite, the prior and each method's value function
from the registries, runs every (method, seed) over the tasks with bounded concurrency, appends
each task's :class:`~amc.smc.records.TaskResult` as soon as it finishes, and skips tasks whose
results already exist (resume). Summaries are means and standard errors over tasks.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from amc.config import MethodConfig, RunConfig, config_hash
from amc.protocols import EnvSuite, Prior, ValueFunction
from amc.registry import ENVIRONMENTS, PRIORS, VALUES
from amc.results import append_jsonl, read_jsonl, repair_tail, results_path
from amc.smc.methods import parse_method
from amc.smc.records import TaskResult
from amc.smc.sampler import run_task
from amc.smc.scoring import mean_and_se

METRICS = ("oracle_best", "selected_reward", "weighted_mean_reward", "success")


@dataclass
class Components:
    """The built components of a run (closed by :meth:`aclose`)."""

    suite: EnvSuite
    prior: Prior
    values: dict[str, ValueFunction]

    async def aclose(self) -> None:
        for v in self.values.values():
            await v.aclose()
        await self.prior.aclose()
        self.suite.close()


def resolve_methods(cfg: RunConfig) -> list[MethodConfig]:
    """Method specs of the run, resolved (fails early on a bad spec)."""
    return [parse_method(m, cfg.smc, cfg.value, cfg.values) for m in cfg.methods]


def task_list(cfg: RunConfig, suite: EnvSuite) -> list[str]:
    """The run's task ids: explicit ids, or the split (truncated to max_tasks)."""
    ids = list(cfg.task_ids) if cfg.task_ids else suite.task_ids(cfg.split)
    return ids[: cfg.max_tasks] if cfg.max_tasks else ids


def build_components(cfg: RunConfig, methods: Sequence[MethodConfig]) -> Components:
    """Build the suite, the prior and one value function per distinct value config."""
    env_opts = ENVIRONMENTS.validate(cfg.env.name, cfg.env.options)
    suite = ENVIRONMENTS.build(cfg.env.name, cfg.env.options)
    ctx: dict[str, Any] = {"env_name": cfg.env.name, "env_options": env_opts}
    try:
        prior = PRIORS.build(cfg.prior.name, cfg.prior.options or None, **ctx)
        values: dict[str, ValueFunction] = {}
        for m in methods:
            key = m.value.model_dump_json()
            if key not in values:
                values[key] = VALUES.build(m.value.name, m.value.options or None, beta=m.smc.beta,
                                           prior=prior, **ctx)
    except BaseException:
        suite.close()
        raise
    return Components(suite, prior, values)


async def run_one_method(
    comps: Components,
    method: MethodConfig,
    tasks: Sequence[str],
    seed: int,
    out_path: Path,
    *,
    run_hash: str,
    max_concurrent_tasks: int,
    particle_semaphore: asyncio.Semaphore,
    progress: bool = True,
) -> list[TaskResult]:
    """Run one (method, seed) over ``tasks``, resuming from ``out_path``."""
    repair_tail(out_path)
    done: dict[str, TaskResult] = {}
    for rec in read_jsonl(out_path):
        if rec.get("config_hash") != run_hash:
            raise ValueError(
                f"{out_path} holds results of a different configuration; "
                "use another out_dir or delete the file"
            )
        done[str(rec["task_id"])] = TaskResult.from_dict(rec)
    todo = [t for t in tasks if t not in done]
    value = comps.values[method.value.model_dump_json()]
    task_sem = asyncio.Semaphore(max_concurrent_tasks)
    bar = tqdm(total=len(tasks), initial=len(tasks) - len(todo), desc=f"{method.name} s{seed}",
               unit="task", file=sys.stderr, disable=not progress, leave=False)

    async def one(task_id: str) -> TaskResult:
        async with task_sem:
            res = await run_task(suite=comps.suite, prior=comps.prior, value=value,
                                 task_id=task_id, smc=method.smc, seed=seed, method=method.name,
                                 config_hash=run_hash, semaphore=particle_semaphore)
        append_jsonl(out_path, res.to_dict())
        bar.update()
        return res

    outcomes = await asyncio.gather(*(one(t) for t in todo), return_exceptions=True)
    bar.close()
    errors = [(t, o) for t, o in zip(todo, outcomes, strict=True) if isinstance(o, BaseException)]
    if errors:
        t, e = errors[0]
        raise RuntimeError(
            f"{len(errors)} of {len(todo)} tasks failed for {method.name} (first: task {t}: "
            f"{type(e).__name__}: {e}); finished tasks are saved, rerun to resume"
        ) from e
    for t, o in zip(todo, outcomes, strict=True):
        done[t] = o  # type: ignore[assignment]
    return [done[t] for t in tasks]


async def run_methods(cfg: RunConfig, *, progress: bool = True) -> dict[str, list[TaskResult]]:
    """Run every (method, seed) of ``cfg``; returns results keyed by ``method@seed``."""
    methods = resolve_methods(cfg)
    comps = build_components(cfg, methods)
    try:
        tasks = task_list(cfg, comps.suite)
        if not tasks:
            raise ValueError(f"no tasks in split {cfg.split!r} of {cfg.env.name}")
        sem = asyncio.Semaphore(cfg.max_concurrent_particles)
        out: dict[str, list[TaskResult]] = {}
        for m in methods:
            for seed in cfg.seeds:
                run_hash = config_hash(_method_run_config(cfg, m))
                out[f"{m.name}#{seed}"] = await run_one_method(
                    comps, m, tasks, seed, results_path(cfg.out_dir, m.name, seed),
                    run_hash=run_hash, max_concurrent_tasks=cfg.max_concurrent_tasks,
                    particle_semaphore=sem, progress=progress)
        return out
    finally:
        await comps.aclose()


def _method_run_config(cfg: RunConfig, m: MethodConfig) -> dict[str, Any]:
    """What determines a (method) results file's content: env, prior, method (not seeds/paths)."""
    return {"env": cfg.env.model_dump(mode="json"), "prior": cfg.prior.model_dump(mode="json"),
            "method": m.model_dump(mode="json")}


def summarise(results: Mapping[str, Sequence[TaskResult]]) -> list[dict[str, Any]]:
    """Per-method rows: mean and s.e. over all (task, seed) results of each metric."""
    by_method: dict[str, list[TaskResult]] = {}
    for key, rs in results.items():
        by_method.setdefault(key.rsplit("#", 1)[0], []).extend(rs)
    rows = []
    for name, rs in by_method.items():
        row: dict[str, Any] = {"method": name, "tasks": len({r.task_id for r in rs}),
                               "runs": len(rs)}
        for k in METRICS:
            row[k], row[k + "_se"] = mean_and_se([r.metrics[k] for r in rs])
        row["tokens_per_task"] = sum(r.usage.total_tokens for r in rs) / max(len(rs), 1)
        row["cost_per_task"] = sum(r.usage.cost_usd for r in rs) / max(len(rs), 1)
        row["log_z"] = mean_and_se([r.metrics["log_z"] for r in rs])[0]
        rows.append(row)
    return rows


def format_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """A plain-text table of :func:`summarise` rows."""
    head = ["method", "tasks", "oracle best", "selected", "weighted mean", "success",
            "tokens/task", "$/task"]
    body = [[r["method"], str(r["tasks"]),
             *(f"{r[k]:.3f} ± {r[k + '_se']:.3f}" for k in METRICS),
             f"{r['tokens_per_task']:.0f}", f"{r['cost_per_task']:.4f}"] for r in rows]
    widths = [max(len(x) for x in col) for col in zip(head, *body, strict=True)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join([fmt.format(*head), fmt.format(*("-" * w for w in widths)),
                      *(fmt.format(*b) for b in body)])
