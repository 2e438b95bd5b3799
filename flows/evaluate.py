"""Flow ``amc-evaluate``: every (method, seed) of the evaluation plan as one Prefect task.

:func:`amc.pipeline.evaluate.plan` resolves the registry aliases to pinned versions once; the
units (one results file each, so no two tasks write the same file) fan out on the configured
task runner, retried and resumable; :func:`finalize` (:func:`amc.pipeline.evaluate.close`)
checks completeness, writes the record and the metrics file and logs the MLflow run, exactly as
:func:`amc.pipeline.evaluate.run` does; a complete evaluation is then recorded in ``dvc.lock``
(:func:`flows._common.record`). The evaluation is published as a markdown report and a table
artifact (keys ``amc-evaluation`` and ``amc-evaluation-table``).

It reads top to bottom: each task makes one call into the stage, the stage calls the shared
helpers, nothing calls back up; the drift monitor (:mod:`flows.drift`) is a subflow that the
scheduled evaluation runs once, after its evaluation is recorded
(``tests/flows/test_evaluate_reads_top_down.py`` traces one and checks this).
"""

from __future__ import annotations

import time
from typing import Any

from prefect import flow, task, unmapped
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE
from prefect.concurrency.sync import concurrency

from amc.pipeline import evaluate as lib
from flows._common import (
    DATA_EVAL_LIMIT,
    default_runner,
    ensure_data_eval_limit,
    eval_markdown,
    eval_table,
    params,
    record,
    task_runner,
)
from flows._log import say


@task(name="evaluate-plan", retries=2, retry_delay_seconds=[2, 10], cache_policy=NO_CACHE)
def plan(params_path: str, overrides: list[str]) -> list[tuple[str, int]]:
    """Resolve tasks, model versions and methods; returns the (spec, seed) units."""
    pl = lib.plan(params(params_path, overrides))
    return [(m["spec"], s) for m in pl["methods"] for s in pl["seeds"]]


@task(name="evaluate-unit", retries=2, retry_delay_seconds=[2, 10], cache_policy=NO_CACHE)
def run_unit(params_path: str, overrides: list[str], unit: tuple[str, int]) -> str:
    """Run (or resume) one method spec and seed; returns its results file."""
    spec, seed = unit  # progress lines (done/total, ETA), as the collect shards print them
    return str(lib.run_unit(params(params_path, overrides), spec, seed, progress=True))


@task(name="evaluate-finalize", cache_policy=NO_CACHE)
def finalize(params_path: str, overrides: list[str], error: str | None = None,
             started: float | None = None) -> dict[str, Any]:
    """Check completeness, write the record, log the MLflow run, publish artifacts."""
    ev = lib.close(params(params_path, overrides), error, started)
    create_markdown_artifact(key="amc-evaluation", markdown=eval_markdown(ev),
                             description=f"AMC evaluation ({ev['status']})")
    if ev["methods"]:
        create_table_artifact(key="amc-evaluation-table", table=eval_table(ev),
                              description="per-method mean ± s.e.")
    return ev


@flow(name="amc-evaluate", log_prints=False, task_runner=default_runner())
def evaluate_flow(params_path: str = "params.yaml", overrides: list[str] | None = None,
                  monitor_drift: bool = False) -> str:
    """Evaluate every method; returns the path of the record (raises unless complete).

    ``monitor_drift`` (the scheduled deployment sets it; ``drift.enabled`` too) then checks
    the champion against fresh rollouts of the current prior (:mod:`flows.drift`).

    Holds a slot of the global concurrency limit ``amc-data-eval`` (created by
    ``flows.deploy``, or here when missing) while it writes ``evaluate.out_dir``: the
    scheduled evaluation and the retraining flow's evaluation never write ``data/eval`` at the
    same time.
    """
    ov = list(overrides or [])
    ensure_data_eval_limit()
    with concurrency(DATA_EVAL_LIMIT, occupy=1):
        ev = _evaluate(params_path, ov)
    if ev["status"] != "complete":
        raise RuntimeError(f"evaluation {ev['status']}: {ev.get('error') or ev['problems'][:3]}")
    record("evaluate", params_path, ov)
    p = params(params_path, ov)
    path = str(lib.record_path(p))
    say(lib.line(ev))  # the stage's own line, as under dvc repro
    if monitor_drift and p.drift.enabled:
        from flows.drift import drift_flow

        drift_flow(params_path, ov)
    return path


def _evaluate(params_path: str, ov: list[str]) -> dict[str, Any]:
    started = time.time()  # the MLflow run of the evaluation starts here
    units = plan(params_path, ov)
    futures = run_unit.map(unmapped(params_path), unmapped(ov), units)
    errors = []
    for f in futures:
        try:
            f.result()
        except Exception as err:  # every unit still gets its chance; failures are recorded
            errors.append(f"{type(err).__name__}: {err}")
    return finalize(params_path, ov, "; ".join(errors)[:1000] or None, started)


def configured(params_path: str = "params.yaml", overrides: list[str] | None = None) -> Any:
    """``evaluate_flow`` with the task runner that ``flows.task_runner`` selects."""
    return evaluate_flow.with_options(task_runner=task_runner(params(params_path,
                                                                     overrides or [])))


if __name__ == "__main__":
    configured()()
