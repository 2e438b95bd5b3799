"""Flow ``amc-collect``: prior rollouts on the train split, fanned out over task shards.

Each shard is one Prefect task (retried on failure; resumable, because finished tasks are on
disk) running :func:`amc.pipeline.collect.collect` on every K-th task, with the SMC/agent loop
as plain asyncio inside the task. The shards run on the configured task runner (thread pool,
or Dask for a cluster); a last task merges them and records the stage
(:func:`amc.pipeline.collect.finish`: manifest + MLflow run), as ``dvc repro`` does, then the
outputs are recorded in ``dvc.lock`` (:func:`flows._common.record`). With ``rounds.enabled`` the
flow first opens (or resumes) the round, so every shard writes the same round's directory with
its fresh seeds.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from prefect import flow, task, unmapped
from prefect.cache_policies import NO_CACHE

from amc.pipeline import collect as stage
from amc.pipeline import rounds
from flows._common import default_runner, params, record, task_runner
from flows._log import say


@task(name="collect-shard", retries=2, retry_delay_seconds=[2, 10], cache_policy=NO_CACHE)
def collect_shard(params_path: str, overrides: list[str], k: int, n_shards: int) -> str:
    """Collect shard k of K; returns its directory."""
    p = stage.stage_params(params(params_path, overrides))  # the open round's dir and seeds
    res = stage.collect(p, shard=(k, n_shards), progress=True)  # lines: done/total, ETA
    return str(res.out_dir)


@task(name="open-round", retries=1, cache_policy=NO_CACHE)
def open_round(params_path: str, overrides: list[str]) -> int | None:
    """Open (or resume) the round before the shards fan out; its number (None: no rounds)."""
    p = params(params_path, overrides)
    return int(rounds.open_round(p)["round"]) if rounds.enabled(p) else None


@task(name="collect-merge", retries=1, cache_policy=NO_CACHE)
def merge(params_path: str, overrides: list[str], started: float | None = None) -> str:
    """Merge the shards into the canonical files; returns the manifest path."""
    res = stage.finish(params(params_path, overrides), started)
    return str(res.out_dir / stage.MANIFEST)


@flow(name="amc-collect", log_prints=False, task_runner=default_runner())
def collect_flow(params_path: str = "params.yaml", overrides: list[str] | None = None,
                 shards: int | None = None) -> str:
    """Collect trajectories; returns the path of ``manifest.json``."""
    ov = list(overrides or [])
    started = time.time()  # the MLflow run of the collection starts here
    p = params(params_path, ov)
    n = shards or p.flows.collect_shards
    if (done := nothing_to_collect(p)) is not None:
        return done
    r = open_round(params_path, ov)
    if r is not None:
        say(f"round {r}")
    futures = collect_shard.map(unmapped(params_path), unmapped(ov), list(range(n)),
                                unmapped(n))
    futures.result()  # raises if any shard failed after its retries
    manifest = merge(params_path, ov, started)
    record("collect", params_path, ov)
    m = json.loads(Path(manifest).read_text())  # the counts actually collected
    res = stage.CollectResult(Path(manifest).parent, [], m["tasks"], m["records"], m["complete"])
    say(stage.line(p, res))  # the stage's own line, as under dvc repro
    return manifest


def nothing_to_collect(p: Any) -> str | None:
    """The manifest path when every (task, seed) is already collected and recorded (no rounds:
    a round always collects fresh seeds), after saying so; None when there is work."""
    manifest = p.collect.out_dir / stage.MANIFEST
    if rounds.enabled(p) or not manifest.is_file() \
            or not json.loads(manifest.read_text()).get("complete") \
            or set(stage.all_tasks(p)) - stage.collected(p):
        return None
    m = json.loads(manifest.read_text())
    say(f"collect: nothing new: {m['tasks']} tasks x {len(m['seeds'])} seeds = {m['records']} "
        f"records already in {p.collect.out_dir}; nothing collected or recorded")
    return str(manifest)


def configured(params_path: str = "params.yaml", overrides: list[str] | None = None) -> Any:
    """``collect_flow`` with the task runner that ``flows.task_runner`` selects."""
    return collect_flow.with_options(task_runner=task_runner(params(params_path,
                                                                    overrides or [])))


if __name__ == "__main__":  # `python -m flows.collect` (guard needed by process-based Dask)
    configured()()
