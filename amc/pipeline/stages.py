"""Tracked stages: each library stage inside an MLflow run of its kind's experiment.

These are what ``amc collect|evaluate|promote|report`` and the Prefect flows call, so a DVC
stage and a flow task do exactly the same work and leave the same lineage (git commit and
``dvc.lock`` input hashes as run tags; :mod:`amc.pipeline.lineage`).
"""

from __future__ import annotations

import json
from typing import Any

from amc.pipeline import collect as _collect
from amc.pipeline import evaluate as _evaluate
from amc.pipeline import promote as _promote
from amc.pipeline import report as _report
from amc.pipeline.evaluate import metric_key
from amc.pipeline.lineage import stage_run
from amc.pipeline.params import PipelineParams


def _shared(p: PipelineParams) -> dict[str, Any]:
    return {"env": p.env.model_dump(mode="json"), "prior": p.prior.model_dump(mode="json"),
            "smc": p.smc.model_dump(mode="json")}


def collect_stage(p: PipelineParams, *, progress: bool = True) -> _collect.CollectResult:
    """Collect (resuming) and record the run in ``amc-collect``."""
    import mlflow

    res = _collect.collect(p, progress=progress)
    with stage_run("collect", params={**_shared(p), "collect": p.collect.model_dump(mode="json")},
                   uri=p.mlflow_uri):
        mlflow.log_metrics({"tasks": res.tasks, "records": res.records,
                            "complete": float(res.complete)})
        mlflow.log_artifact(str(res.out_dir / _collect.MANIFEST))
    if not res.complete:
        raise RuntimeError(f"collect incomplete: see {res.out_dir / _collect.MANIFEST}")
    return res


def finish_collect(p: PipelineParams) -> _collect.CollectResult:
    """After sharded collection: merge shards, write the manifest, record the run."""
    import mlflow

    res = _collect.merge_shards(p)
    with stage_run("collect", params={**_shared(p), "collect": p.collect.model_dump(mode="json")},
                   uri=p.mlflow_uri, tags={"amc.sharded": "true"}):
        mlflow.log_metrics({"tasks": res.tasks, "records": res.records,
                            "complete": float(res.complete)})
    if not res.complete:
        raise RuntimeError(f"collect incomplete: see {res.out_dir / _collect.MANIFEST}")
    return res


def log_evaluation(p: PipelineParams, ev: dict[str, Any]) -> None:
    """Record an evaluation (per-method metrics, eval.json) in ``amc-evaluate``."""
    import mlflow

    with stage_run("evaluate",
                   params={**_shared(p), "evaluate": p.evaluate.model_dump(mode="json")},
                   inputs=["data/trajectories", "models/value"], uri=p.mlflow_uri,
                   tags={"eval.status": ev["status"],
                         "eval.challenger": str((ev["models"].get("challenger") or {})
                                                .get("version"))}):
        mlflow.log_metrics({metric_key(s, k): float(m[k]) for s, m in ev["methods"].items()
                            for k in ("success", "selected_reward", "oracle_best",
                                      "tokens_per_task")})
        mlflow.log_dict(ev, "eval.json")


def evaluate_stage(p: PipelineParams, *, progress: bool = True) -> dict[str, Any]:
    """Evaluate (resuming), record the run; raise when the evaluation is not complete."""
    try:
        ev = _evaluate.evaluate(p, progress=progress)
    except Exception:
        f = p.evaluate.metrics_file
        if f.is_file():
            log_evaluation(p, json.loads(f.read_text()))
        raise
    log_evaluation(p, ev)
    if ev["status"] != "complete":
        raise RuntimeError(f"evaluation {ev['status']}: {'; '.join(ev['problems'][:3])}")
    return ev


def promote_stage(p: PipelineParams) -> dict[str, Any]:
    """The promotion gate (records its own run in ``amc-promote``)."""
    return _promote.promote(p)


def report_stage(p: PipelineParams, *, calibrate: bool = True) -> dict[str, Any]:
    """Plots + summary.json, logged as artifacts in ``amc-report``."""
    import mlflow

    s = _report.report(p, calibrate=calibrate)
    with stage_run("report", params=p.report.model_dump(mode="json"),
                   inputs=[str(p.evaluate.metrics_file)], uri=p.mlflow_uri):
        mlflow.log_artifacts(str(p.report.plots_dir), "plots")
        mlflow.log_dict(s, "summary.json")
    return s
