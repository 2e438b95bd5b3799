"""Flow ``amc-retrain-and-promote``: the whole loop, scheduled by ``flows/deploy.py``.

collect (sharded, resumable) -> dataset -> train (registers the challenger) -> evaluate
(challenger vs champion on the same tasks, N and seeds) -> promote (moves ``champion`` only on a
complete evaluation that beats it by more than its standard error) -> report. Outputs produced
by the flow's own tasks are recorded in ``dvc.lock`` (``dvc commit``, serialised) so that
``dvc repro`` and the flow share one lineage. The decision is published as a markdown and a
table artifact (keys ``amc-promotion`` and ``amc-promotion-table``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

from amc.pipeline import promote as promote_lib
from amc.pipeline.stages import promote_stage, report_stage
from flows._common import params
from flows.collect import collect_flow
from flows.evaluate import evaluate_flow
from flows.train import dvc_commit, train_flow


@task(name="promote", retries=1, retry_delay_seconds=5, cache_policy=NO_CACHE)
def promote(params_path: str, overrides: list[str]) -> dict[str, Any]:
    """The promotion gate; publishes the decision as artifacts."""
    d = promote_stage(params(params_path, overrides))
    create_markdown_artifact(key="amc-promotion", markdown=promote_lib.markdown(d),
                             description="promoted" if d["promote"] else "kept champion")
    create_table_artifact(key="amc-promotion-table", table=[
        {k: (str(v) if v is not None else "") for k, v in d.items()}],
        description="promotion evidence")
    return d


@task(name="report", retries=1, cache_policy=NO_CACHE)
def report(params_path: str, overrides: list[str]) -> str:
    """Plots and summary.json; returns the summary path."""
    p = params(params_path, overrides)
    report_stage(p)
    return str(p.report.summary_file)


@flow(name="amc-retrain-and-promote", log_prints=True)
def retrain_and_promote(params_path: str = "params.yaml", overrides: list[str] | None = None,
                        root: str = ".", record_in_dvc: bool | None = None) -> dict[str, Any]:
    """Collect, retrain, evaluate, promote, report; returns the promotion decision."""
    ov = list(overrides or [])
    dvc = record_in_dvc if record_in_dvc is not None else (Path(root) / ".dvc").is_dir()
    collect_flow(params_path, ov)
    if dvc and not ov:  # overrides are not params.yaml: keep them out of dvc.lock
        dvc_commit("collect", root)
    train_flow(root)
    evaluate_flow(params_path, ov)
    d = promote(params_path, ov)
    summary = report(params_path, ov)
    if dvc and not ov:
        for stage in ("evaluate", "promote", "report"):
            dvc_commit(stage, root)
    print(f"{'PROMOTED' if d['promote'] else 'kept'}: {d['reason']}; summary: {summary}")
    return d


if __name__ == "__main__":
    retrain_and_promote()
