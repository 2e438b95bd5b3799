"""Lineage of pipeline runs: one MLflow experiment per stage kind, runs tagged with git + DVC.

DVC owns data lineage (``dvc.lock`` hashes every stage's inputs and outputs); MLflow owns runs
and models. To join the two, every stage run is tagged with the git commit (``git_commit``,
``git_dirty``), the hash of ``dvc.lock`` (``dvc_lock_sha256``; both from :mod:`amc.tracking`)
and, for each input path, the hash ``dvc.lock`` recorded when the stage that produces it last
ran (``dvc.input.<path>``). ``dvc repro``
writes a stage's lock entry as soon as it finishes, so the upstream entries are current when a
downstream stage starts.

Tracking always uses a SQLite store (``sqlite:///mlruns/mlflow.db`` unless configured):
the plain file store refuses to start in MLflow 3.13+.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

EXPERIMENTS = {"collect": "amc-collect", "dataset": "amc-dataset", "train": "amc-value",
               "evaluate": "amc-evaluate", "promote": "amc-promote", "report": "amc-report"}


def setup(uri: str | None, experiment: str) -> str:
    """Point MLflow at the SQLite store and get-or-create ``experiment``; returns its id."""
    from amc.tracking import setup_tracking

    return setup_tracking(uri, experiment)


def dvc_input_hashes(inputs: Sequence[str | Path], lock: str | Path = "dvc.lock"
                     ) -> dict[str, str]:
    """Tags ``dvc.input.<path>`` = hash of each input as recorded in ``dvc.lock``.

    An input produced by a stage takes that stage's ``outs`` hash; a plain dependency (no
    producing stage) takes the hash from any stage's ``deps``. Missing entries are skipped.
    """
    p = Path(lock)
    if not p.is_file():
        return {}
    data = yaml.safe_load(p.read_text()) or {}
    outs: dict[str, str] = {}
    deps: dict[str, str] = {}
    for stage in (data.get("stages") or {}).values():
        for kind, table in (("outs", outs), ("deps", deps)):
            for entry in stage.get(kind) or ():
                h = entry.get("md5") or entry.get("hash") or entry.get("etag")
                if h and "path" in entry:
                    table[str(Path(entry["path"]))] = str(h)
    tags: dict[str, str] = {}
    for path in inputs:
        key = str(Path(path))
        h = outs.get(key) or deps.get(key)
        if h:
            tags[f"dvc.input.{key}"] = h
    return tags


@contextmanager
def stage_run(kind: str, *, params: Mapping[str, Any], inputs: Sequence[str | Path] = (),
              uri: str | None = None, tags: Mapping[str, str] | None = None) -> Iterator[Any]:
    """An MLflow run in the stage kind's experiment, tagged with git and DVC lineage."""
    import mlflow

    setup(uri, EXPERIMENTS.get(kind, f"amc-{kind}"))
    from amc.tracking import flatten_params, run_tags

    # git_commit, git_dirty, dvc_lock_sha256 (amc.tracking) + per-input dvc.lock hashes
    all_tags = {"amc.stage": kind, **run_tags(), **dvc_input_hashes(inputs)}
    if os.environ.get("DVC_EXP_NAME"):  # set by `dvc exp run`
        all_tags["dvc.exp_name"] = os.environ["DVC_EXP_NAME"]
    all_tags.update(tags or {})
    with mlflow.start_run(run_name=kind, tags=all_tags) as run:
        mlflow.log_params(flatten_params(params))
        yield run
