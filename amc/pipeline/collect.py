"""Stage ``collect``: trajectories of the prior on the train split, the value model's data.

Each task is run as Best-of-G (``bon@G``: G independent prior rollouts, never resampled) for
every seed in ``collect.seeds``; the runner appends one JSON line per finished task to
``<out_dir>/bon@G__seed<k>.jsonl`` and fsyncs it, so a killed collect loses only the tasks in
flight and a rerun resumes with the missing ones (no task twice: finished ids are skipped).

Fan-out (Prefect flows): :func:`collect` with ``shard=(k, K)`` runs every K-th task into
``<out_dir>/shards/<k>-of-<K>/`` (one writer per file, so shards can run in other processes);
:func:`merge_shards` then folds the shard files into the canonical files atomically. The stage
ends by writing ``manifest.json`` (atomically): files, tasks, records per seed and whether
every (task, seed) is present exactly once.

:func:`run` is the stage (``python -m amc.pipeline.collect``, ``amc collect``, the flow): the
collection, recorded as an MLflow run of experiment ``amc-collect`` that lasts as long as the
collection did. With ``rounds.enabled`` it first opens (or resumes) the round and collects into
the round's own directory with the round's fresh seeds (:mod:`amc.pipeline.rounds`). The
configuration is validated before any stale file is deleted, so a bad override never costs
finished rollouts. Tasks that a held-out set reserves (``collect.exclude_tasks_files``: a test
set declared before its runs, so no value is ever trained on its tasks) are never collected:
they are left out of the split before ``max_tasks`` applies (:func:`allowed_tasks`).
"""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from amc.config import RunConfig, config_hash
from amc.pipeline import rounds
from amc.pipeline.artifacts import (  # task_identity: re-exported, callers name it here
    MANIFEST,
    drop_stale,
    excluded_tasks,
    task_identity,  # noqa: F401
)
from amc.pipeline.lineage import stage_run
from amc.pipeline.params import PipelineParams, check_components, stage_main
from amc.registry import ENVIRONMENTS
from amc.results import (
    TIMING,
    append_jsonl,
    read_jsonl,
    results_path,
    sort_task_records,
    write_json_atomic,
    write_jsonl_atomic,
)
from amc.run_hash import _method_run_config
from amc.runner import resolve_methods, run_methods, task_list


@dataclass(frozen=True)
class CollectResult:
    """What a collect produced."""

    out_dir: Path
    files: list[Path]
    tasks: int
    records: int
    complete: bool


def run_config(p: PipelineParams, out_dir: Path | None = None,
               task_ids: Sequence[str] | None = None) -> RunConfig:
    """The runner configuration of the collect stage (Best-of-G on the train split, less the
    tasks of held-out sets: :func:`allowed_tasks`)."""
    c = p.collect
    if task_ids is None:
        task_ids = allowed_tasks(p)
    return RunConfig(
        env=p.env, prior=p.prior, smc=p.smc.model_copy(update={"resample": "never"}),
        methods=(f"bon@{c.rollouts}",), split=c.split, max_tasks=c.max_tasks,
        task_ids=tuple(task_ids) if task_ids is not None else None, seeds=c.seeds,
        max_concurrent_tasks=c.max_concurrent_tasks,
        max_concurrent_particles=c.max_concurrent_particles, out_dir=out_dir or c.out_dir)


def allowed_tasks(p: PipelineParams) -> list[str] | None:
    """The split's tasks minus those the held-out sets reserve (then max_tasks), or None when
    none applies (the runner then takes the split as it is)."""
    if not p.collect.exclude_tasks_files:
        return None
    valid = ENVIRONMENTS.validate(p.env.name, p.env.options)
    opts = {} if valid is None else valid.model_dump(mode="json")
    excluded = excluded_tasks(p.env.name, opts, p.collect.exclude_tasks_files)
    if not excluded:
        return None
    suite = ENVIRONMENTS.build(p.env.name, p.env.options)
    try:
        ids = [t for t in suite.task_ids(p.collect.split) if t not in excluded]
    finally:
        suite.close()
    return ids[: p.collect.max_tasks] if p.collect.max_tasks else ids


def all_tasks(p: PipelineParams) -> list[str]:
    """The collect split's task ids (after max_tasks)."""
    cfg = run_config(p)
    suite = ENVIRONMENTS.build(cfg.env.name, cfg.env.options)
    try:
        return task_list(cfg, suite)
    finally:
        suite.close()


def shard_dir(p: PipelineParams, k: int, n_shards: int) -> Path:
    """Where shard k of K writes."""
    return p.collect.out_dir / "shards" / f"{k}-of-{n_shards}"


def collect(p: PipelineParams, *, shard: tuple[int, int] | None = None,
            progress: bool = True) -> CollectResult:
    """Run (or resume) the collection; with ``shard=(k, K)`` only every K-th task."""
    check_components(p)  # before drop_stale: a bad config must not delete finished rollouts
    if shard is None:
        cfg = run_config(p)
    else:
        k, n_shards = shard
        if not 0 <= k < n_shards:
            raise ValueError(f"shard {k} of {n_shards}: need 0 <= k < K")
        have = collected(p)  # a shard never collects again what the canonical files hold
        ids = [t for t in all_tasks(p)[k::n_shards] if t not in have]
        if not ids:  # before the config: a RunConfig refuses an empty task list
            return CollectResult(shard_dir(p, k, n_shards), [], 0, 0, True)
        cfg = run_config(p, shard_dir(p, k, n_shards), ids)
    drop_stale(cfg)
    asyncio.run(run_methods(cfg, progress=progress))
    if shard is not None:
        files = [results_path(cfg.out_dir, m.name, s)
                 for m in resolve_methods(cfg) for s in cfg.seeds]
        n = sum(1 for f in files for _ in read_jsonl(f))
        return CollectResult(cfg.out_dir, files, len(cfg.task_ids or ()), n, True)
    return write_manifest(p)


def collected(p: PipelineParams) -> set[str]:
    """Tasks the canonical results files already hold for every (method, seed) of ``p``."""
    cfg = run_config(p)
    sets = []
    for m in resolve_methods(cfg):
        want = config_hash(_method_run_config(cfg, m))
        for seed in cfg.seeds:
            path = results_path(cfg.out_dir, m.name, seed)
            sets.append({str(r["task_id"]) for r in read_jsonl(path)
                         if r.get("config_hash") == want})
    return set.intersection(*sets) if sets else set()


def merge_shards(p: PipelineParams) -> CollectResult:
    """Fold shard files into the canonical files (atomically), drop the shards, write manifest.

    A record already in the canonical file wins; a (task, seed) is never written twice.
    """
    cfg = run_config(p)
    root = p.collect.out_dir / "shards"
    for m in resolve_methods(cfg):
        want = config_hash(_method_run_config(cfg, m))
        for seed in cfg.seeds:
            dest = results_path(cfg.out_dir, m.name, seed)
            recs = {str(r["task_id"]): r for r in read_jsonl(dest)}
            n_before = len(recs)
            for part in sorted(root.glob(f"*/{dest.name}")):
                for r in read_jsonl(part):
                    if r.get("config_hash") == want:
                        recs.setdefault(str(r["task_id"]), r)
            if len(recs) > n_before:  # nothing new: the file (and its DVC hash) stays as is
                write_jsonl_atomic(dest, list(recs.values()))
                sort_task_records(dest, all_tasks(p))  # the bytes of an unsharded collect
            for part in sorted(root.glob(f"*/{TIMING}/{dest.name}")):  # the shards' wall times
                for r in read_jsonl(part):
                    append_jsonl(dest.parent / TIMING / dest.name, r)
    shutil.rmtree(root, ignore_errors=True)
    return write_manifest(p)


def write_manifest(p: PipelineParams) -> CollectResult:
    """Check every (task, seed) is present exactly once and write ``manifest.json``."""
    cfg = run_config(p)
    tasks = all_tasks(p)
    files, per_seed, total, complete = [], {}, 0, True
    for m in resolve_methods(cfg):
        for seed in cfg.seeds:
            path = results_path(cfg.out_dir, m.name, seed)
            ids = [str(r["task_id"]) for r in read_jsonl(path)]
            dupes = len(ids) - len(set(ids))
            missing = sorted(set(tasks) - set(ids))
            complete &= not dupes and not missing
            per_seed[str(seed)] = {"records": len(ids), "duplicates": dupes,
                                   "missing": missing[:20], "n_missing": len(missing)}
            files.append(path)
            total += len(ids)
    manifest: dict[str, Any] = {
        "env": p.env.name, "prior": p.prior.name, "split": p.collect.split,
        "rollouts": p.collect.rollouts, "tasks": len(tasks), "records": total,
        "complete": complete, "seeds": per_seed, "files": [f.name for f in files],
        "config": cfg.model_dump(mode="json"),
    }
    write_json_atomic(cfg.out_dir / MANIFEST, manifest)
    return CollectResult(cfg.out_dir, files, len(tasks), total, complete)


def _record(p: PipelineParams, res: CollectResult, tags: dict[str, str] | None = None, *,
            started: float | None = None) -> None:
    """The MLflow run of a collection (and the round's ledger step); raises when incomplete.

    ``p`` is the collection's own params (:func:`stage_params`); ``started`` back-dates the
    run to when the collection began.
    """
    import mlflow

    r = rounds.active_round(p)
    shared = {k: getattr(p, k).model_dump(mode="json") for k in ("env", "prior", "smc")}
    with stage_run("collect", params={**shared, "collect": p.collect.model_dump(mode="json")},
                   uri=p.mlflow_uri, tags=tags, round_=r, started=started,
                   detail=f"{res.records} records"):
        mlflow.log_metrics({"tasks": res.tasks, "records": res.records,
                            "complete": float(res.complete)})
        mlflow.log_artifact(str(res.out_dir / MANIFEST))
    if r is not None and res.complete:
        rounds.record_step(p, r, "collect", {
            "dir": str(res.out_dir), "seeds": list(p.collect.seeds), "tasks": res.tasks,
            "records": res.records, "rollouts": res.records * p.collect.rollouts,
            "files": [f.name for f in res.files]})
    if not res.complete:
        raise RuntimeError(f"collect incomplete: see {res.out_dir / MANIFEST}")


def stage_params(p: PipelineParams) -> PipelineParams:
    """The params the collection runs with: the open round's directory and seeds with rounds
    (:func:`amc.pipeline.rounds.collect_params`), ``p`` itself without."""
    return rounds.collect_params(p)


def run(p: PipelineParams, *, progress: bool = False) -> CollectResult:
    """The stage: open (or resume) the round, collect (resuming), record ``amc-collect``."""
    if rounds.enabled(p):
        rounds.open_round(p)
    cp = stage_params(p)
    started = time.time()
    res = collect(cp, progress=progress)
    _record(cp, res, started=started)
    return res


def finish(p: PipelineParams, started: float | None = None) -> CollectResult:
    """The stage after a sharded collection (Prefect): merge shards, manifest, record."""
    cp = stage_params(p)
    res = merge_shards(cp)
    _record(cp, res, {"amc.sharded": "true"}, started=started)
    return res


def line(p: PipelineParams, res: CollectResult) -> str:
    """The stage's one-line result: the counts actually collected (records x G rollouts)."""
    return (f"collect: {res.tasks} tasks x {len(stage_params(p).collect.seeds)} seeds = "
            f"{res.records} records, {res.records * p.collect.rollouts} rollouts in "
            f"{res.out_dir}{'' if res.complete else ' (incomplete)'}")


if __name__ == "__main__":  # the DVC stage's cmd: progress on stderr (lines when it is a log)
    stage_main(lambda p: print(line(p, run(p, progress=True)), flush=True))
