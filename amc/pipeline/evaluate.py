"""Stage ``evaluate``: every method over an N grid and several seeds, on the same test tasks.

Methods are configurations of the one SIR driver: ``react`` (N=1), ``bon@N`` (Best-of-N),
``smc@N`` (SMC with the zero-shot value) and ``smc@N+challenger`` (AMC with the freshly trained
value model). When a champion is registered, ``smc@N+champion`` runs too, so promotion compares
the two models on the *same* tasks, N and seeds.

The registry aliases are resolved once, by :func:`plan`, to pinned versions
(``models:/<name>/<version>``) written to ``<out_dir>/plan.json``; every unit of work (one
method spec and seed: one results file) then runs against that plan, in this process or in a
Prefect task elsewhere. :func:`finalize` checks that every (method, seed, task) is present
exactly once with finite metrics and writes the full record ``<out_dir>/evaluation.json``
(status ``complete``, ``incomplete`` or ``failed``, models, settings, per-method summaries) and
the small DVC metrics file ``evaluate.metrics_file`` (a few headline numbers,
:mod:`amc.pipeline.artifacts`, so ``dvc metrics show`` fits a terminal) beside
``<out_dir>/metrics.json`` (not a DVC metric: ``complete``, ``tasks`` and per spec
``success``, ``oracle_best``, ``deployable_reward`` (when measured) and
``max_weight_reward``). Wall times are not in these records, whose bytes a rerun reproduces:
each sitting's is in ``<out_dir>/timing/sessions.jsonl`` (:func:`amc.results.sessions_wall`).
Summaries are over tasks (seeds averaged first); the record also holds
every SMC-type method's paired difference to Best-of-N at the same N with a 95% t interval
over tasks (:func:`amc.reports.paired.paired_to_bon`).
A failed run still writes its record (status ``failed``) so that a later promotion refuses it.

With ``evaluate.selection_value`` (e.g. ``challenger``) every method's pool is also scored by
that value and its highest-scored trajectory is the *deployable* answer
(:mod:`amc.smc.scoring`); without it the deployable metrics are NaN and left out of the checks.

:func:`run` is the stage (``python -m amc.pipeline.evaluate``, ``amc evaluate``): the evaluation
inside an MLflow run of experiment ``amc-evaluate``.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import time
from collections.abc import Sequence
from operator import attrgetter
from pathlib import Path
from typing import Any

from amc.config import RunConfig
from amc.envs.benchmarks import get_benchmark
from amc.pipeline.artifacts import (
    DETAIL,
    PLAN,
    RECORD,
    drop_stale,
    eval_headline,
    evaluation_tasks,
    load_plan,
    load_record,
    load_results,
    record_path,
    resolve_alias,
)
from amc.pipeline.lineage import stage_run
from amc.pipeline.params import PipelineParams, model_name, stage_main
from amc.reports.paired import paired_to_bon
from amc.results import (
    record_session,
    results_path,
    write_json_atomic,
)
from amc.runner import METRICS, run_methods, summarise
from amc.smc.records import TaskResult
from amc.value.data import histories_from_record
from amc.value.room import rollouts_from_histories, summarise_room

METRICS_PER_METHOD = ("success", "oracle_best", "deployable_reward", "max_weight_reward")
"""The per-method numbers in the DVC metrics file (the rest is in the record and MLflow)."""


def method_specs(p: PipelineParams, with_champion: bool) -> list[tuple[str, str, int]]:
    """``(spec, role, N)`` of every method to run, in table order."""
    e = p.evaluate
    out: list[tuple[str, str, int]] = []
    if "react" in e.methods:
        out.append(("react", "react", 1))
    for n in e.n_grid:
        for kind in ("bon", "smc", "amc"):
            if kind == "smc" and e.smc_n_grid is not None and n not in e.smc_n_grid:
                continue
            if kind in e.methods:
                spec = {"bon": f"bon@{n}", "smc": f"smc@{n}", "amc": f"smc@{n}+challenger"}[kind]
                out.append((spec, kind, n))
        if with_champion and "amc" in e.methods:
            out.append((f"smc@{n}+champion", "champion", n))
    return out


def plan(p: PipelineParams) -> dict[str, Any]:
    """Resolve the tasks (a bad declared set is refused before anything is written), mark the
    record ``running`` (:func:`mark_running`), then resolve model versions and methods; write
    ``plan.json``; return the plan."""
    tasks = evaluation_tasks(p)
    mark_running(p)
    e = p.evaluate
    models: dict[str, Any] = {"name": None, "challenger": None, "champion": None}
    if "amc" in e.methods:
        name = model_name(p)
        models["name"] = name
        if e.challenger is not None:
            models["challenger"] = {"version": None, "uri": e.challenger}
        else:
            v = resolve_alias(name, "challenger", p.mlflow_uri)
            if v is None:
                raise ValueError(f"no challenger: registered model {name!r} has no alias "
                                 "'challenger' (run the train stage first)")
            check_model_env(p, name, v)
            models["challenger"] = {"version": v, "uri": f"models:/{name}/{v}"}
        champ = resolve_alias(name, p.promote.alias, p.mlflow_uri) if e.compare_champion \
            else None
        if champ is not None and champ != models["challenger"]["version"]:
            models["champion"] = {"version": champ, "uri": f"models:/{name}/{champ}"}
    specs = method_specs(p, models["champion"] is not None)
    out = {"tasks": tasks, "seeds": list(e.seeds), "n_grid": list(e.n_grid), "models": models,
           "requested": list(e.methods),
           "methods": [{"spec": s, "role": r, "n": n} for s, r, n in specs]}
    write_json_atomic(e.out_dir / PLAN, out)
    return out


def run_config(p: PipelineParams, pl: dict[str, Any], specs: Sequence[str] | None = None,
               seeds: Sequence[int] | None = None) -> RunConfig:
    """Runner configuration of (a subset of) the plan."""
    e = p.evaluate
    values = {role: p.model_value(m["uri"])
              for role in ("challenger", "champion") if (m := pl["models"].get(role))}
    return RunConfig(
        env=p.env, prior=p.prior, smc=p.smc, value=e.zero_shot_value, values=values,
        methods=tuple(specs if specs is not None else [m["spec"] for m in pl["methods"]]),
        task_ids=tuple(pl["tasks"]), seeds=tuple(seeds if seeds is not None else pl["seeds"]),
        selection_value=e.selection_value,
        max_concurrent_tasks=e.max_concurrent_tasks,
        max_concurrent_particles=e.max_concurrent_particles, out_dir=e.out_dir)


def run_unit(p: PipelineParams, spec: str, seed: int, *, progress: bool = False) -> Path:
    """Run (or resume) one method spec and seed of the plan; returns its results file."""
    cfg = run_config(p, load_plan(p), [spec], [seed])
    drop_stale(cfg)
    asyncio.run(run_methods(cfg, progress=progress))
    return results_path(cfg.out_dir, spec, seed)


def evaluate(p: PipelineParams, *, progress: bool = True) -> dict[str, Any]:
    """Plan, run every unit (resuming), finalize; returns the record (``evaluation.json``)."""
    started = time.time()
    pl = plan(p)
    cfg = run_config(p, pl)
    drop_stale(cfg)
    try:
        for block in blocks(cfg, p.evaluate.block_tasks):
            asyncio.run(run_methods(block, progress=progress))
    except BaseException as err:  # also Ctrl-C: the sitting's time still counts
        record_session(p.evaluate.out_dir, started, "failed")
        finalize(p, error=f"{type(err).__name__}: {err}")
        raise
    record_session(p.evaluate.out_dir, started, "finished")
    return finalize(p)


def blocks(cfg: RunConfig, k: int | None) -> list[RunConfig]:
    """The evaluation's runs in order: ``cfg`` itself, or with ``k`` (``block_tasks``) one run
    per (seed, block of k tasks), every method in each (finished tasks are skipped: resume)."""
    if k is None:
        return [cfg]
    tasks = list(cfg.task_ids or ())
    return [cfg.model_copy(update={"seeds": (s,), "task_ids": tuple(tasks[i:i + k])})
            for s in cfg.seeds for i in range(0, len(tasks), k)]


def check_model_env(p: PipelineParams, name: str, version: str) -> None:
    """Refuse a version whose training data came from another environment (``amc.env`` tag)."""
    import mlflow

    tags = mlflow.MlflowClient().get_model_version(name, version).tags or {}
    if tags.get("amc.env", p.env.name) != p.env.name:
        raise ValueError(f"{name} v{version} was trained on {tags['amc.env']!r} data, not "
                         f"env.name={p.env.name!r}")


def mark_running(p: PipelineParams) -> None:
    """Replace the record by a ``running`` status, so a stale one can never be promoted."""
    write_json_atomic(record_path(p), {"status": "running", "error": None, "models": {},
                                       "methods": {}})
    write_json_atomic(p.evaluate.metrics_file, {"complete": 0})


def flat_metrics(ev: dict[str, Any]) -> dict[str, float | int]:
    """The DVC metrics of a record: flat keys, numbers only."""
    out: dict[str, float | int] = {"complete": int(ev["status"] == "complete"),
                                   "tasks": int(ev.get("n_tasks") or 0)}
    for spec, m in ev["methods"].items():
        for k in METRICS_PER_METHOD:
            if math.isfinite(float(m.get(k, math.nan))):  # JSON has no NaN: unmeasured is absent
                out[f"{spec}.{k}"] = round(float(m[k]), 4)
    return out


def required_metrics(p: PipelineParams) -> tuple[str, ...]:
    """Metrics every result must have finite (deployable ones only with a selection value)."""
    return tuple(k for k in METRICS if p.evaluate.selection_value or "deployable" not in k)


def _finite(r: TaskResult, keys: Sequence[str]) -> bool:
    return all(math.isfinite(float(r.metrics.get(k, math.nan))) for k in keys)


def finalize(p: PipelineParams, error: str | None = None) -> dict[str, Any]:
    """Check completeness, summarise per method, write the record + metrics; the record."""
    pl = load_plan(p)
    results = load_results(p, pl)
    ran = {m["role"] for m in pl["methods"]}
    problems = [f"{role}: requested in evaluate.methods, but no method of it ran"
                for role in pl.get("requested", p.evaluate.methods) if role not in ran]
    for key, rs in results.items():
        if len(rs) != len(pl["tasks"]):
            problems.append(f"{key}: {len(rs)} of {len(pl['tasks'])} tasks")
        bad = [r.task_id for r in rs if not _finite(r, required_metrics(p))]
        if bad:
            problems.append(f"{key}: non-finite metrics on tasks {bad[:5]}")
    status = "failed" if error else ("incomplete" if problems else "complete")
    rows = {r["method"]: r for r in summarise(results) if r["runs"]}
    roles = {m["spec"]: m for m in pl["methods"]}
    methods = {s: {"role": roles[s]["role"], "n": roles[s]["n"], **{
        k: v for k, v in row.items() if k != "method"}} for s, row in rows.items()}
    out = {"status": status, "error": error, "problems": problems[:20], "env": p.env.name,
           "prior": p.prior.name, "split": p.evaluate.split, "n_tasks": len(pl["tasks"]),
           "seeds": pl["seeds"], "n_grid": pl["n_grid"], "models": pl["models"],
           "config": resolved_config(p),
           "methods": methods, "paired": paired_to_bon(methods, results),
           "room": room_record(p, pl, results),
           "warnings": [w for m in methods.values() for w in m.get("warnings") or ()]}
    write_json_atomic(record_path(p), out)
    write_json_atomic(p.evaluate.out_dir / DETAIL, flat_metrics(out))  # every number, flat
    write_json_atomic(p.evaluate.metrics_file,
                      eval_headline(out, p.evaluate.selection_value is not None))
    return out


def close(p: PipelineParams, error: str | None = None, started: float | None = None
          ) -> dict[str, Any]:
    """The evaluation's last step after its units: :func:`finalize`, then :func:`log_run`
    (the flow's ``evaluate-finalize`` task); returns the record."""
    ev = finalize(p, error=error)
    log_run(p, ev, started)
    return ev


def room_record(p: PipelineParams, pl: dict[str, Any],
                results: dict[str, list[TaskResult]]) -> dict[str, Any]:
    """The offline room (:mod:`amc.value.room`) of each Best-of-N arm at each resampling step:
    every seed's N rollouts of a task are a group, the other seeds' rollouts give a state's
    chance (so it needs two seeds or more; the state key is the benchmark's observed summary)."""
    summarise_state = get_benchmark(p.env.name).observed_summary or attrgetter("observation")
    out: dict[str, Any] = {}
    for m in pl["methods"]:
        if not m["spec"].startswith("bon@") or len(pl["seeds"]) < 2:
            continue
        by_task: dict[str, list[Any]] = {}
        for seed in pl["seeds"]:
            for r in results.get(f"{m['spec']}#{seed}", []):
                hs = histories_from_record(r.to_dict())
                by_task.setdefault(r.task_id, []).extend(rollouts_from_histories(
                    hs, [seed] * len(hs), summarise_state,
                    threshold=p.smc.success_threshold))
        steps = [t for t in p.smc.resample_steps if 0 < t < p.smc.max_steps]
        out[m["spec"]] = [summarise_room(by_task, n=m["n"], horizon=p.smc.max_steps, step=t,
                                         beta=p.smc.beta) for t in steps]
    return out


def resolved_config(p: PipelineParams) -> dict[str, Any]:
    """What the evaluation ran (env, prior, smc, evaluate), for the report and results doc.

    Only the pipeline's typed sections: API keys never live there (they come from the
    environment), so nothing secret can reach the metrics files.
    """
    return {k: getattr(p, k).model_dump(mode="json") for k in ("env", "prior", "smc", "evaluate")}


def metric_key(spec: str, metric: str) -> str:
    """An MLflow-safe metric name (``smc@4+challenger`` -> ``smc_4_challenger.success``)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", spec) + "." + metric


def log_run(p: PipelineParams, ev: dict[str, Any], started: float | None = None) -> None:
    """Record an evaluation (per-method metrics, the record) in ``amc-evaluate``.

    ``started`` back-dates the run to when the evaluation began. The run's inputs: the dataset
    version the challenger was trained on (its ``dataset_dvc`` tag) and the evaluation set
    (tasks and seeds, digest = their hash).
    """
    import mlflow

    from amc.pipeline.rounds import active_round

    shared = {k: getattr(p, k).model_dump(mode="json") for k in ("env", "prior", "smc")}
    chal = (ev["models"].get("challenger") or {}).get("version")
    with stage_run("evaluate", params={**shared, "evaluate": p.evaluate.model_dump(mode="json")},
                   inputs=[str(p.collect.out_dir), str(p.train.out_dir)], uri=p.mlflow_uri,
                   tags={"eval.status": ev["status"], "eval.challenger": str(chal)},
                   round_=active_round(p), started=started,
                   detail=f"challenger v{chal} · {ev['status']}") as run:
        mlflow.log_metrics({metric_key(s, k): float(m[k]) for s, m in ev["methods"].items()
                            for k in (*METRICS_PER_METHOD, "tokens_per_task")
                            if math.isfinite(float(m.get(k, math.nan)))})
        mlflow.log_dict(ev, RECORD)
    log_inputs(p, ev, run.info.run_id)


def log_inputs(p: PipelineParams, ev: dict[str, Any], run_id: str) -> None:
    """The evaluation run's MLflow inputs (see :func:`log_run`)."""
    import hashlib

    import mlflow

    from amc.pipeline.lineage import log_dataset_input

    name, chal = ev["models"].get("name"), (ev["models"].get("challenger") or {}).get("version")
    if name and chal:
        tags = mlflow.MlflowClient().get_model_version(name, chal).tags or {}
        digest = tags.get("dataset_dvc") or tags.get("dataset_hash")
        r = int(tags["amc.round"]) if "amc.round" in tags else None
        if digest:
            log_dataset_input(run_id, p.dataset.out_dir, digest, context="challenger-training",
                              round_=r)
    if not (p.evaluate.out_dir / PLAN).is_file():
        return
    eval_set = json.dumps({"env": ev.get("env"), "split": ev.get("split"),
                           "tasks": load_plan(p)["tasks"], "seeds": ev.get("seeds")},
                          sort_keys=True)
    log_dataset_input(run_id, p.evaluate.out_dir / PLAN,
                      hashlib.sha256(eval_set.encode()).hexdigest()[:32], context="evaluation")


def run(p: PipelineParams, *, progress: bool = False) -> dict[str, Any]:
    """The stage: evaluate (resuming), record the run; raise unless the evaluation is complete."""
    started = time.time()
    try:
        ev = evaluate(p, progress=progress)
    except Exception:
        if record_path(p).is_file():
            log_run(p, load_record(p), started)
        raise
    log_run(p, ev, started)
    if ev["status"] != "complete":
        raise RuntimeError(f"evaluation {ev['status']}: {'; '.join(ev['problems'][:3])}")
    return ev


def line(ev: dict[str, Any]) -> str:
    """The stage's one-line result: success per method (then a line per warning)."""
    return "evaluate: " + ", ".join(f"{s} {m['success']:.2f}"
                                    for s, m in ev["methods"].items()) + " (success)" + "".join(
        f"\nwarning: {w}" for w in ev.get("warnings") or ())


if __name__ == "__main__":  # the DVC stage's cmd: progress on stderr (lines when it is a log)
    stage_main(lambda p: print(line(run(p, progress=True)), flush=True))
