"""Flow ``amc-retrain-and-promote``: the whole loop, scheduled by ``flows/deploy.py``.

A run with nothing new (the train stage finds the challenger trained from the same dataset,
params and code, and the last decision was made on it) stops after training: no version is
registered, nothing is evaluated or promoted; one line and the ``amc-promotion`` artifact say so.

collect (sharded, resumable) -> dataset -> train (registers the challenger) -> evaluate
(challenger vs champion on the same tasks, N and seeds) -> promote (moves ``champion`` only on a
complete evaluation that beats it by more than its standard error) -> report. Every task runs
its stage's ``run`` with the same params and overrides, and records its outputs in ``dvc.lock``
the one way the flows do (:func:`flows._common.record`), so ``dvc repro`` and the flow share one
lineage. Overrides reach every stage; an overridden run writes under
``runs/overrides-<hash>/`` and registers ``amc-value-<env>-<hash>``, never the default model.
The decision is published as a markdown and a table artifact (keys ``amc-promotion`` and
``amc-promotion-table``), the evaluation with its plots as images (key ``amc-report``).
"""

from __future__ import annotations

import json
from typing import Any

from prefect import flow, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

from amc.pipeline import promote as promote_stage
from amc.pipeline import report as report_stage
from amc.pipeline.artifacts import load_record
from flows._common import eval_markdown, params, record
from flows._log import say
from flows.collect import collect_flow
from flows.evaluate import evaluate_flow
from flows.train import train_flow


@task(name="promote", retries=1, retry_delay_seconds=5, cache_policy=NO_CACHE)
def promote(params_path: str, overrides: list[str]) -> dict[str, Any]:
    """The promotion gate; publishes the decision as artifacts."""
    d = promote_stage.run(params(params_path, overrides))
    create_markdown_artifact(key="amc-promotion", markdown=promote_stage.markdown(d),
                             description="promoted" if d["promote"] else "kept champion")
    create_table_artifact(key="amc-promotion-table", table=[
        {k: (str(v) if v is not None else "") for k, v in d.items()}],
        description="promotion evidence")
    return d


@task(name="report", retries=1, cache_policy=NO_CACHE)
def report(params_path: str, overrides: list[str]) -> str:
    """Plots and summary.json; publishes the evaluation with its plots embedded (artifact
    ``amc-report``); returns the summary path."""
    p = params(params_path, overrides)
    report_stage.run(p)
    create_markdown_artifact(key="amc-report",
                             markdown=eval_markdown(load_record(p),
                                                    p.report.plots_dir),
                             description="evaluation with its plots")
    return str(p.report.summary_file)


def nothing_new(p: Any, trained: dict[str, Any]) -> dict[str, Any] | None:
    """The last decision, when training reused the challenger it was made on (same dataset,
    params and code): nothing to evaluate, promote or report; says so (line and artifact)."""
    out = p.promote.out_file
    if not trained.get("reused") or not out.is_file():
        return None
    d = json.loads(out.read_text())
    if str(d.get("challenger_version")) != str(trained["version"]):
        return None
    msg = (f"nothing new: dataset, params and code unchanged since {trained['model']} "
           f"v{trained['version']}; nothing trained, registered, evaluated or promoted "
           f"(last decision: {'promoted' if d.get('promote') else 'kept'}, {d.get('reason')})")
    create_markdown_artifact(key="amc-promotion", markdown=f"# Nothing new\n\n{msg}\n",
                             description="nothing new: no retraining")
    say(msg)
    return {**d, "nothing_new": True}


@flow(name="amc-retrain-and-promote", log_prints=False)
def retrain_and_promote(params_path: str = "params.yaml", overrides: list[str] | None = None
                        ) -> dict[str, Any]:
    """Collect, retrain, evaluate, promote, report; returns the promotion decision."""
    ov = list(overrides or [])
    params(params_path, ov)  # validate params and overrides before any stage runs
    collect_flow(params_path, ov)
    trained = train_flow(params_path, ov)
    if (same := nothing_new(params(params_path, ov), trained)) is not None:
        return same
    evaluate_flow(params_path, ov)
    d = promote(params_path, ov)
    record("promote", params_path, ov)
    say(promote_stage.line(d))  # each stage's own line, as under dvc repro
    report(params_path, ov)
    record("report", params_path, ov)
    say(report_stage.line(params(params_path, ov)))
    return d


if __name__ == "__main__":
    retrain_and_promote()
