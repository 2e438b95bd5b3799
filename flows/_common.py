"""Shared pieces of the flows: params, the configured task runner, DVC recording, artifacts.

Flows pass *paths and params* between tasks, never trajectories: every task reloads
``params.yaml`` (plus overrides) and reads/writes files, so results stay small and tasks can run
in another process (Dask). Task inputs are plain strings, but caching is off (``NO_CACHE``):
the work is resumable on disk already and a cache hit would hide a changed file.

How a flow records its outputs in DVC (one way, everywhere): a task runs the stage's ``run``
function (the same one ``dvc repro`` runs), then :func:`record` runs ``dvc commit -f <stage>``
so ``dvc.lock`` holds the hashes of what the flow produced and ``dvc status`` stays clean. Only
``params.yaml`` runs are recorded: an overridden run writes to its own folder
(``runs/overrides-<hash>/``, :mod:`amc.pipeline.params`), which no ``dvc.yaml`` stage owns.
DVC calls are serialised by a file lock (DVC refuses concurrent processes in one repository):
:func:`amc.pipeline.lineage.dvc_commit` is the one helper, shared with ``python -m
amc.pipeline.round``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from amc.pipeline.lineage import dvc_commit
from amc.pipeline.params import PipelineParams, load_params, overrides_tag
from amc.progress import quiet_libraries
from flows._artifacts import image_markdown

DATA_EVAL_LIMIT = "amc-data-eval"
"""Global concurrency limit (1 slot) held while a flow writes ``evaluate.out_dir``."""


def ensure_data_eval_limit() -> None:
    """Create the 1-slot limit when it is missing (a flow run without ``flows.deploy``, which
    makes it): otherwise Prefect skips it with a warning at every unit, and limits nothing."""
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    with get_client(sync_client=True) as client:
        try:
            client.read_global_concurrency_limit_by_name(DATA_EVAL_LIMIT)
        except ObjectNotFound:
            client.upsert_global_concurrency_limit_by_name(DATA_EVAL_LIMIT, 1)


def params(path: str, overrides: Sequence[str] = ()) -> PipelineParams:
    """Load the pipeline params (every task calls this; cheap), the libraries quiet (as in a
    DVC stage: :func:`amc.progress.quiet_libraries`)."""
    quiet_libraries()
    return load_params(path, list(overrides))


def task_runner(p: PipelineParams) -> Any:
    """The task runner the params ask for (thread pool, or Dask from the scale extra)."""
    f = p.flows
    if f.task_runner == "dask":
        try:
            from prefect_dask import DaskTaskRunner
        except ImportError:
            raise ValueError("flows.task_runner=dask needs the scale extra: "
                             "pip install -e '.[scale]'") from None
        if f.dask_address:
            return DaskTaskRunner(address=f.dask_address)
        return DaskTaskRunner(cluster_kwargs={
            "n_workers": f.max_workers, "threads_per_worker": 1,
            "processes": f.dask_processes, "dashboard_address": None})
    from prefect.task_runners import ThreadPoolTaskRunner

    return ThreadPoolTaskRunner(max_workers=f.max_workers)


def default_runner() -> Any:
    """The runner ``$AMC_PARAMS`` (default ``params.yaml`` in the cwd) selects, else threads.

    Evaluated when a flow module is imported, so a served deployment (which re-imports the
    flow in a subprocess) also gets the configured runner.
    """
    path = Path(os.environ.get("AMC_PARAMS", "params.yaml"))
    try:
        return task_runner(params(str(path))) if path.is_file() else task_runner(
            PipelineParams())
    except ValueError:  # unreadable params or a missing extra: the flow call reports it
        return task_runner(PipelineParams())


def dvc_root(params_path: str) -> Path | None:
    """The DVC project of a params file (its directory, when it holds ``.dvc/``)."""
    root = Path(params_path).resolve().parent
    return root if (root / ".dvc").is_dir() else None


@task(name="dvc-record", retries=1, retry_delay_seconds=5, cache_policy=NO_CACHE)
def record(stage: str, params_path: str, overrides: Sequence[str]) -> bool:
    """``dvc commit -f <stage>`` after a task produced the stage's outputs from params.yaml.

    Returns whether it recorded: not for overridden runs (isolated outputs, not the stage's)
    nor outside a DVC project.
    """
    root = dvc_root(params_path)
    if root is None or overrides_tag(list(overrides)) is not None:
        return False
    return dvc_commit(stage, root)


def eval_table(ev: dict[str, Any]) -> list[dict[str, Any]]:
    """Rows of the per-method evaluation table artifact."""
    return [{"method": s, "role": m["role"], "N": m["n"], "tasks": m["tasks"],
             "success": round(m["success"], 4), "success_se": round(m["success_se"], 4),
             "deployable_reward": round(m.get("deployable_reward", math.nan), 4),
             "max_weight_reward": round(m["max_weight_reward"], 4),
             "oracle_best": round(m["oracle_best"], 4),
             "tokens_per_task": round(m["tokens_per_task"], 1)}
            for s, m in ev["methods"].items()]


PLOTS = ("success_vs_n.png", "cost_quality.png", "genealogy.png", "calibration.png")
"""The report stage's plots (:mod:`amc.pipeline.report`), in the order the artifact shows them."""


def eval_markdown(ev: dict[str, Any], plots_dir: str | Path | None = None) -> str:
    """The evaluation report artifact (status, models, per-method table; with ``plots_dir``,
    the report's plots embedded as PNG images)."""
    models = ev.get("models") or {}
    lines = [f"# AMC evaluation: {ev.get('env')} ({ev['status']})", "",
             f"- tasks: {ev.get('n_tasks')}, seeds: {ev.get('seeds')}, N grid: {ev.get('n_grid')}",
             f"- challenger: {models.get('challenger')}", f"- champion: {models.get('champion')}",
             "", "| method | N | success | deployable | oracle best | max weight (uses R) | "
             "tokens/task |", "|---|---|---|---|---|---|---|"]
    for r in eval_table(ev):
        lines.append(f"| {r['method']} | {r['N']} | {r['success']:.3f} ± {r['success_se']:.3f}"
                     f" | {r['deployable_reward']:.3f} | {r['oracle_best']:.3f} |"
                     f" {r['max_weight_reward']:.3f} | {r['tokens_per_task']:.0f} |")
    if ev.get("problems"):
        lines += ["", "Problems: " + "; ".join(ev["problems"])]
    if plots_dir:
        lines += ["", "## Plots", ""]
        for name in PLOTS:  # inline images (a path on the worker shows nothing in the UI)
            png = Path(plots_dir) / name
            lines += [image_markdown(png, png.stem.replace("_", " ")) if png.is_file()
                      else f"({name}: not written)", ""]
    return "\n".join(lines) + "\n"
