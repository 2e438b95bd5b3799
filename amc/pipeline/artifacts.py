"""The pipeline's artifacts on disk and in the registry, shared by the stages.

Every DVC stage (``collect``, ``dataset``, ``train``, ``evaluate``, ``promote``, ``report``)
imports what it reads of another stage's outputs from here -- never the other stage: the
collect manifest's name, stale results files of a changed configuration, the dataset's
``source.json``, the evaluation plan, record and results,
and the registry alias lookup.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from amc.config import RunConfig, config_hash
from amc.pipeline.params import PipelineParams
from amc.results import read_jsonl, results_path
from amc.run_hash import _method_run_config, sample_hash
from amc.runner import resolve_methods
from amc.smc.records import TaskResult
from amc.smc.scoring import upgrade_metric_keys

MANIFEST = "manifest.json"
SOURCE = "source.json"
PLAN = "plan.json"
RECORD = "evaluation.json"


def source(dataset_dir: Path) -> dict[str, Any]:
    """``source.json`` of a dataset built by the dataset stage (clear error when missing)."""
    path = dataset_dir / SOURCE
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: rebuild the dataset with the dataset stage")
    return json.loads(path.read_text())


def resolve_alias(name: str, alias: str, uri: str | None = None) -> str | None:
    """The version ``alias`` points at in the registry (None when absent)."""
    import mlflow
    from mlflow.exceptions import MlflowException

    from amc.pipeline.lineage import setup

    setup(uri, "amc-evaluate")
    try:
        return str(mlflow.MlflowClient().get_model_version_by_alias(name, alias).version)
    except MlflowException:
        return None


def load_plan(p: PipelineParams) -> dict[str, Any]:
    """The plan written by :func:`amc.pipeline.evaluate.plan` (clear error when missing)."""
    path = p.evaluate.out_dir / PLAN
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: run the evaluation plan first")
    return json.loads(path.read_text())


def record_path(p: PipelineParams) -> Path:
    """The full evaluation record (``<out_dir>/evaluation.json``)."""
    return p.evaluate.out_dir / RECORD


def load_record(p: PipelineParams) -> dict[str, Any]:
    """The evaluation record (clear error when missing)."""
    path = record_path(p)
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: run the evaluate stage first")
    ev = json.loads(path.read_text())
    ev["methods"] = {k: upgrade_metric_keys(m) for k, m in (ev.get("methods") or {}).items()}
    return ev


def load_results(p: PipelineParams, pl: dict[str, Any]) -> dict[str, list[TaskResult]]:
    """Results keyed ``spec#seed`` (only the plan's tasks, in plan order, first record wins)."""
    out: dict[str, list[TaskResult]] = {}
    wanted = set(pl["tasks"])
    for m in pl["methods"]:
        for seed in pl["seeds"]:
            recs: dict[str, TaskResult] = {}
            for d in read_jsonl(results_path(p.evaluate.out_dir, m["spec"], seed)):
                if str(d["task_id"]) in wanted:
                    recs.setdefault(str(d["task_id"]), TaskResult.from_dict(d))
            out[f"{m['spec']}#{seed}"] = [recs[t] for t in pl["tasks"] if t in recs]
    return out


def drop_stale(cfg: RunConfig) -> list[Path]:
    """Delete results files of ``cfg`` written under another configuration (DVC persists them).

    Returns the deleted paths. Files of the current configuration are kept (resume), and so
    are files sampled alike under another selection value: the runner re-selects them.
    """
    dropped = []
    for m in resolve_methods(cfg):
        want, sample = config_hash(_method_run_config(cfg, m)), sample_hash(cfg, m)
        for seed in cfg.seeds:
            path = results_path(cfg.out_dir, m.name, seed)
            first = next(read_jsonl(path), None)
            if first is not None and first.get("config_hash") != want \
                    and first.get("sample_hash") != sample:
                path.unlink()
                dropped.append(path)
    return dropped
