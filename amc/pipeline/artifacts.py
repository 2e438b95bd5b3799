"""The pipeline's artifacts on disk and in the registry, shared by the stages, and the headline
metrics each stage writes for DVC.

Every DVC stage (``collect``, ``dataset``, ``train``, ``evaluate``, ``promote``, ``report``)
imports what it reads of another stage's outputs from here -- never the other stage: the
collect manifest's name and the tasks the collect section selects (held-out sets left out),
stale results files of a changed configuration, the dataset's
``source.json``, the evaluation plan, record and results,
and the registry alias lookup.

**Headline metrics**: the few flat numbers per stage that DVC shows (``dvc metrics show``).

``dvc metrics show`` and ``dvc exp show`` print one column per key of every metrics file, so
the DVC metrics files hold only what a reader compares across experiments, with short names
and rounded values, so the whole table fits a 120-column terminal:

- ``metrics/eval.json``: ``complete`` (1 when every (method, seed, task) is in) and, at the
  largest N, the headline metric of ``react``, ``bon``, ``smc`` and ``amc`` (the challenger):
  ``deployable_reward`` with a selection value, else ``oracle_best``.
- ``metrics/promotion.json``: ``promoted`` and, only when the gate tested, ``delta`` (mean
  paired improvement) and ``p`` (the gate's p-value): ``-`` in those columns of ``dvc
  metrics show`` means the gate decided without a test (no champion yet, a refused
  evaluation, or too little power for ``promote.max_mde``; the decision file's ``tested``).
  The tested flag and the pair and task counts stay in the decision file, to keep the table
  within 120 columns (measured: 118 with every key present).
- ``metrics/train.json``: ``version`` (the registered challenger), validation ``auc`` and
  ``mae`` of the best epoch.

Everything else stays where it was, as non-metric JSON: the evaluation record
``<evaluate.out_dir>/evaluation.json`` (and every per-method number flat in
``<evaluate.out_dir>/metrics.json``), the decision ``promote.out_file``, and the training's
``<train.out_dir>/metrics.json`` (every validation metric of the best epoch). The headline
functions are pure.
"""

from __future__ import annotations

import collections
import contextlib
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from amc.config import RunConfig, config_hash
from amc.envs.benchmarks import get_benchmark
from amc.pipeline.params import PipelineParams
from amc.results import read_jsonl, read_task_records, results_path
from amc.run_hash import _method_run_config, sample_hash
from amc.runner import resolve_methods, task_list
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


def task_identity(env: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """The options that decide what a task id means (the benchmark record's ``task_identity``):
    two configurations with the same identity name the same tasks by the same ids."""
    return {k: (None if options.get(k) is None else str(options.get(k)))
            for k in get_benchmark(env).task_identity}


def excluded_tasks(env: str, options: Mapping[str, Any], files: Sequence[Path]) -> set[str]:
    """Task ids the held-out sets of ``files`` reserve for this environment: each file is JSON
    with ``tasks``; one that names ``env`` (``name``, and ``identity`` as
    :func:`task_identity` gives it) reserves them only for that environment and identity."""
    out: set[str] = set()
    for f in files:
        try:
            held = json.loads(Path(f).read_text())
            tasks, scope = held["tasks"], held.get("env")
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise ValueError(f"collect.exclude_tasks_files: {f}: not a held-out task set "
                             f"(JSON with 'tasks'): {err}") from err
        if scope is None or (scope.get("name") == env
                             and scope.get("identity") == task_identity(env, options)):
            out.update(str(t) for t in tasks)
    return out


def collect_tasks(p: PipelineParams) -> list[str]:
    """The task ids the ``collect`` section selects now: the split, less the tasks of the
    held-out sets (:func:`excluded_tasks`), then ``max_tasks``. The dataset stage keeps exactly
    these, whatever an older collection left in its files."""
    from amc.registry import ENVIRONMENTS

    c = p.collect
    valid = ENVIRONMENTS.validate(p.env.name, p.env.options)
    opts = {} if valid is None else valid.model_dump(mode="json")
    excluded = excluded_tasks(p.env.name, opts, c.exclude_tasks_files)
    suite = ENVIRONMENTS.build(p.env.name, p.env.options)
    try:
        ids = [t for t in suite.task_ids(c.split) if t not in excluded]
    finally:
        suite.close()
    return ids[: c.max_tasks] if c.max_tasks else ids


def evaluation_tasks(p: PipelineParams) -> list[str]:
    """The tasks the ``evaluate`` section selects: the declared set (``evaluate.tasks_file``,
    every id one the environment has), else the split after ``max_tasks``; refused when empty."""
    from amc.registry import ENVIRONMENTS

    e = p.evaluate
    suite = ENVIRONMENTS.build(p.env.name, p.env.options)
    try:
        if e.tasks_file is None:
            tasks = task_list(RunConfig(env=p.env, split=e.split, max_tasks=e.max_tasks), suite)
        else:
            tasks, known = declared_tasks(e.tasks_file), set()
            for split in ("train", "test", "all", e.split):
                with contextlib.suppress(ValueError, KeyError, FileNotFoundError):
                    known.update(suite.task_ids(split))
            if unknown := [t for t in tasks if known and t not in known]:
                raise ValueError(f"evaluate.tasks_file: {p.env.name} has no task {unknown[0]!r} "
                                 f"({e.tasks_file} lists {len(unknown)} unknown)")
    finally:
        suite.close()
    if not tasks:
        raise ValueError(f"evaluate.split: no tasks in split {e.split!r} of {p.env.name}")
    return tasks


def declared_tasks(path: Path) -> list[str]:
    """The task ids of a declared test set (clear error when the file is not one, is empty or
    lists a task twice: it would run twice and count twice)."""
    try:
        tasks = [str(t) for t in json.loads(Path(path).read_text())["tasks"]]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ValueError(f"evaluate.tasks_file: {path}: not a test-set declaration ({err})"
                         ) from err
    if not tasks:
        raise ValueError(f"evaluate.tasks_file: {path} lists no task")
    twice = next((t for k, t in enumerate(tasks) if t in tasks[:k]), None)
    if twice is not None:
        raise ValueError(f"evaluate.tasks_file: {path} lists task {twice!r} twice")
    return tasks


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
    """Results keyed ``spec#seed`` (only the plan's tasks, in plan order); a task recorded
    twice in a file is refused, naming file:line."""
    out: dict[str, list[TaskResult]] = {}
    wanted = set(pl["tasks"])
    for m in pl["methods"]:
        for seed in pl["seeds"]:
            recs: dict[str, TaskResult] = {}
            for d in read_task_records(results_path(p.evaluate.out_dir, m["spec"], seed)):
                if str(d["task_id"]) in wanted:
                    recs[str(d["task_id"])] = TaskResult.from_dict(d)
            out[f"{m['spec']}#{seed}"] = [recs[t] for t in pl["tasks"] if t in recs]
    return out


def drop_stale(cfg: RunConfig) -> list[Path]:
    """Delete results files of ``cfg`` written under another configuration (DVC persists them).

    Returns the deleted paths. Files of the current configuration are kept (resume), and so
    are files sampled alike under another selection value: the runner re-selects them. A kept
    file must read cleanly (a damaged line or a task recorded twice: ``ValueError`` naming
    file:line), checked here for every unit before the first one runs.
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
            else:
                collections.deque(read_task_records(path), maxlen=0)
    return dropped


ROLES = {"react": "react", "bon": "bon", "smc": "smc", "amc": "amc"}
"""Headline column -> the evaluation role whose largest-N row it reads."""
DETAIL = "metrics.json"
"""Name of the flat detail file in a stage's output folder (not a DVC metric)."""


def _num(x: Any, digits: int) -> float | None:
    return round(float(x), digits) if isinstance(x, (int, float)) and math.isfinite(x) else None


def eval_headline(ev: Mapping[str, Any], selection: bool) -> dict[str, float | int]:
    """``complete`` and each role's headline metric at its largest N (3 decimals)."""
    metric = "deployable_reward" if selection else "oracle_best"
    out: dict[str, float | int] = {"complete": int(ev.get("status") == "complete")}
    rows = list((ev.get("methods") or {}).values())
    for col, role in ROLES.items():
        mine = [m for m in rows if m.get("role") == role]
        if not mine:
            continue
        best = max(mine, key=lambda m: int(m.get("n") or 0))
        if (v := _num(best.get(metric), 3)) is not None:
            out[col] = v
    return out


def promotion_headline(d: Mapping[str, Any]) -> dict[str, float | int]:
    """``promoted`` and, when the gate tested, ``delta`` and ``p``."""
    out: dict[str, float | int] = {"promoted": int(bool(d.get("promote")))}
    if not d.get("tested"):  # an untested mean change is no evidence: it stays in the decision file
        return out
    for key, src, digits in (("delta", "delta", 3), ("p", "p_value", 4)):
        if (v := _num(d.get(src), digits)) is not None:
            out[key] = v
    return out


def train_headline(version: int | str, best: Mapping[str, Any]) -> dict[str, float | int]:
    """``version`` and the best epoch's validation ``auc`` and ``mae`` (3 decimals)."""
    out: dict[str, float | int] = {"version": int(version)}
    for key in ("auc", "mae"):
        if (v := _num(best.get(f"best_val_{key}"), 3)) is not None:
            out[key] = v
    return out
