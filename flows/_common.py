"""Shared pieces of the flows: params, the configured task runner, DVC serialisation, artifacts.

Flows pass *paths and params* between tasks, never trajectories: every task reloads
``params.yaml`` (plus overrides) and reads/writes files, so results stay small and tasks can run
in another process (Dask). Task inputs are plain strings, but caching is off (``NO_CACHE``):
the work is resumable on disk already and a cache hit would hide a changed file.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from amc.pipeline.params import PipelineParams, load_params


def params(path: str, overrides: Sequence[str] = ()) -> PipelineParams:
    """Load the pipeline params (every task calls this; cheap)."""
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


@contextmanager
def dvc_lock(root: str | Path = ".") -> Iterator[None]:
    """Hold an exclusive file lock around a DVC call: one DVC process per repo at a time.

    DVC fails with "Unable to acquire lock" instead of waiting; flow runs (in one process or
    several served subprocesses) queue here instead.
    """
    lock = Path(root) / ".dvc" / "tmp" / "amc-flows.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def run_dvc(args: Sequence[str], root: str | Path = ".") -> str:
    """Run ``dvc <args>`` serialised by :func:`dvc_lock`; returns stdout (error on failure)."""
    with dvc_lock(root):
        proc = subprocess.run(["dvc", *args], cwd=root, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"dvc {' '.join(args)} failed: {proc.stderr.strip()[-500:]}")
    return proc.stdout


def eval_table(ev: dict[str, Any]) -> list[dict[str, Any]]:
    """Rows of the per-method evaluation table artifact."""
    return [{"method": s, "role": m["role"], "N": m["n"], "tasks": m["tasks"],
             "success": round(m["success"], 4), "success_se": round(m["success_se"], 4),
             "selected_reward": round(m["selected_reward"], 4),
             "oracle_best": round(m["oracle_best"], 4),
             "tokens_per_task": round(m["tokens_per_task"], 1)}
            for s, m in ev["methods"].items()]


def eval_markdown(ev: dict[str, Any], plots_dir: str | None = None) -> str:
    """The evaluation report artifact (status, models, per-method table, plot paths)."""
    models = ev.get("models") or {}
    lines = [f"# AMC evaluation: {ev.get('env')} ({ev['status']})", "",
             f"- tasks: {ev.get('n_tasks')}, seeds: {ev.get('seeds')}, N grid: {ev.get('n_grid')}",
             f"- challenger: {models.get('challenger')}", f"- champion: {models.get('champion')}",
             "", "| method | N | success | selected reward | oracle best | tokens/task |",
             "|---|---|---|---|---|---|"]
    for r in eval_table(ev):
        lines.append(f"| {r['method']} | {r['N']} | {r['success']:.3f} ± {r['success_se']:.3f}"
                     f" | {r['selected_reward']:.3f} | {r['oracle_best']:.3f} |"
                     f" {r['tokens_per_task']:.0f} |")
    if ev.get("problems"):
        lines += ["", "Problems: " + "; ".join(ev["problems"])]
    if plots_dir:
        lines += ["", f"Plots: `{plots_dir}` (success_vs_n.png, cost_quality.png, "
                  "genealogy.png, calibration.png)"]
    return "\n".join(lines) + "\n"
