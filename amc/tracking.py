"""MLflow setup shared by training and the pipeline: a SQLite store under ``mlruns/``.

MLflow 3.13+ refuses the plain file store, so tracking always uses a SQLite database
(default ``sqlite:///mlruns/mlflow.db``; ``MLFLOW_TRACKING_URI`` or an explicit URI wins).
Experiments created here put their artifacts next to the database (``<db dir>/artifacts``), so
a temporary store in a test keeps everything in its temporary directory. Runs are tagged with
the git commit (and whether the tree was dirty) and, when present, the hash of ``dvc.lock``.

Create the database and experiment once before fanning out to several processes: concurrent
SQLite migrations race ("database is locked").

Secrets never reach the store: params and tags built here are masked
(:func:`amc.errors.mask_secrets`), and :func:`setup_tracking` makes MLflow's own ``log_param(s)``,
``set_tag(s)``, ``log_dict`` and ``log_text`` mask what they are given (:func:`mask_mlflow`),
so a stage's record that quotes an endpoint's answer cannot carry the key into an artifact.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from amc.errors import mask_json, mask_secrets

DEFAULT_TRACKING_URI = "sqlite:///mlruns/mlflow.db"
NOTE = "mlflow.note.content"
"""The tag MLflow's UI shows as an experiment's description."""
EXPERIMENT_NOTES = {
    "amc-collect": "Stage collect: G prior rollouts per train task (Best-of-G), resumable. One "
                   "run per collection; the manifest as artifact.",
    "amc-dataset": "Stage dataset: value-regression rows (one per visited state, target = "
                   "realised future reward), split by task. Tag dataset_hash = content hash.",
    "amc-value": "Stage train: the MiniLM value model V_theta; each run logs its model "
                 "(metrics linked to it) and registers it as amc-value-<env>@challenger.",
    "amc-evaluate": "Stage evaluate: ReAct, Best-of-N, SMC and AMC (challenger, champion) "
                    "on the same test tasks, N and seeds.",
    "amc-promote": "Stage promote: the gate, challenger vs champion on the frozen evaluation "
                   "set; moves the alias champion when it passes.",
    "amc-report": "Stage report: plots and per-method summaries of the evaluation.",
}
"""Experiment descriptions (set when an experiment is created, or on a store without one)."""


def tracking_uri(uri: str | None = None) -> str:
    """The URI to use: ``uri``, else ``$MLFLOW_TRACKING_URI``, else the default SQLite store."""
    return uri or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_TRACKING_URI


def sqlite_uri(db_path: str | Path) -> str:
    """``sqlite:///`` URI of a database file (absolute path)."""
    return "sqlite:///" + str(Path(db_path).resolve())


def _artifact_root(uri: str) -> str | None:
    """``<db dir>/artifacts`` as a file URI for SQLite stores (None for servers)."""
    if not uri.startswith("sqlite:///"):
        return None
    db = Path(uri[len("sqlite:///"):])
    return (db.resolve().parent / "artifacts").as_uri()


def setup_tracking(uri: str | None = None, experiment: str = "amc") -> str:
    """Point MLflow at the store, get-or-create ``experiment``; returns its id."""
    import mlflow

    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    mask_mlflow(mlflow)
    uri = tracking_uri(uri)
    if uri.startswith("sqlite:///"):
        Path(uri[len("sqlite:///"):]).parent.mkdir(parents=True, exist_ok=True)
    mlflow.set_tracking_uri(uri)
    client = mlflow.MlflowClient()
    exp = client.get_experiment_by_name(experiment)
    note = EXPERIMENT_NOTES.get(experiment)
    if exp is None:
        exp_id = client.create_experiment(experiment, artifact_location=_artifact_root(uri),
                                          tags={NOTE: note} if note else None)
    else:
        exp_id = exp.experiment_id
        if note and NOTE not in exp.tags:  # stores made before descriptions existed
            client.set_experiment_tag(exp_id, NOTE, note)
    mlflow.set_experiment(experiment_id=exp_id)
    return exp_id


def _masked(value: Any) -> Any:
    """``value`` with secrets masked (a string, or any JSON-able structure)."""
    if isinstance(value, str):
        return mask_secrets(value)
    text = json.dumps(value, default=str)
    masked = mask_json(text)
    return value if masked == text else json.loads(masked)


_MASKED_ARG = {"log_param": (1, "value"), "set_tag": (1, "value"), "log_params": (0, "params"),
               "set_tags": (0, "tags"), "log_dict": (0, "dictionary"), "log_text": (0, "text")}
"""MLflow's logging functions and the argument (position, name) whose value is logged."""


def mask_mlflow(mlflow: Any) -> None:
    """Make ``mlflow``'s logging functions mask secrets in every value (idempotent)."""
    if getattr(mlflow, "_amc_masked", False):
        return
    for name, (pos, kw) in _MASKED_ARG.items():
        original = getattr(mlflow, name)

        @functools.wraps(original)
        def masked(*args: Any, _fn: Any = original, _pos: int = pos, _kw: str = kw,
                   **kwargs: Any) -> Any:
            if len(args) > _pos:
                args = (*args[:_pos], _masked(args[_pos]), *args[_pos + 1:])
            elif _kw in kwargs:
                kwargs[_kw] = _masked(kwargs[_kw])
            return _fn(*args, **kwargs)

        setattr(mlflow, name, masked)
    mlflow._amc_masked = True


PIPELINE_WRITTEN = ("dvc.lock", "metrics/", "plots/", "frozen/")
"""Tracked paths the root pipeline itself rewrites (``dvc repro`` writes ``dvc.lock`` after every
stage, the stages their metrics, plots and the frozen evaluation set): changes there do not
make the code a run ran differ from its commit, so they do not set ``git_dirty``. Any other DVC
project in the repository adds its own ``dvc.lock`` and the outputs its ``dvc.yaml`` declares
(:func:`declared_outputs`)."""


def declared_outputs(root: Path, dvc_yamls: list[str]) -> tuple[str, ...]:
    """The ``dvc.lock`` and every declared out, metric and plot of each ``dvc.yaml`` (paths
    relative to ``root``; a folder out ends with ``/``)."""
    import yaml

    out: list[str] = []
    for rel in dvc_yamls:
        base = Path(rel).parent
        try:
            doc = yaml.safe_load((root / rel).read_text()) or {}
        except (OSError, yaml.YAMLError):
            continue
        names = [e for st in (doc.get("stages") or {}).values() if isinstance(st, dict)
                 for key in ("outs", "metrics", "plots") for e in st.get(key) or []]
        names += [e for e in doc.get("plots") or [] if isinstance(e, str)]
        out.append((base / "dvc.lock").as_posix())
        for e in names:
            name = next(iter(e)) if isinstance(e, dict) else str(e)
            path = (base / name).as_posix()
            out.append(path + "/" if (root / path).is_dir() else path)
    return tuple(out)


def dirty_paths(porcelain: str, written: tuple[str, ...] = PIPELINE_WRITTEN) -> list[str]:
    """Paths of ``git status --porcelain`` output that make a tree dirty (the pipelines' own
    outputs, ``written``, left out)."""
    paths = [line[3:].split(" -> ")[-1].strip().strip('"') for line in porcelain.splitlines()]
    return [p for p in paths if p and not p.startswith(written)]


def git_commit(cwd: str | Path | None = None) -> tuple[str | None, bool]:
    """(HEAD commit, dirty flag) of the repository at ``cwd``; (None, False) outside git.

    Dirty = a tracked file differs from HEAD, outputs the pipeline rewrites excepted
    (:func:`dirty_paths`)."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True,
                              text=True, timeout=10, check=True).stdout.strip()
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                                cwd=cwd, capture_output=True, text=True, timeout=10).stdout
        if not dirty_paths(status):  # clean apart from the root pipeline's own outputs
            return head, False
        top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=cwd,
                             capture_output=True, text=True, timeout=10).stdout.strip()
        yamls = subprocess.run(["git", "ls-files", "--", "dvc.yaml", "*/dvc.yaml"], cwd=top,
                               capture_output=True, text=True, timeout=10).stdout.split()
        written = PIPELINE_WRITTEN + declared_outputs(Path(top), yamls)
        return head, bool(dirty_paths(status, written))
    except (OSError, subprocess.SubprocessError):
        return None, False


def run_tags(extra: dict[str, Any] | None = None, cwd: str | Path | None = None) -> dict[str, str]:
    """Tags for a run: git commit/dirty, the ``dvc.lock`` hash if present, plus ``extra``."""
    tags: dict[str, str] = {}
    commit, dirty = git_commit(cwd)
    if commit:
        tags["git_commit"] = commit
        tags["git_dirty"] = str(dirty).lower()
    lock = Path(cwd or ".") / "dvc.lock"
    if lock.is_file():
        tags["dvc_lock_sha256"] = hashlib.sha256(lock.read_bytes()).hexdigest()[:16]
    tags.update({k: mask_secrets(str(v)) for k, v in (extra or {}).items()})
    return tags


PARAM_VALUE_LIMIT = 6000
"""MLflow 3's limit on a logged param value (characters)."""


def flatten_params(d: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """Nested config -> flat ``a.b.c`` params for ``mlflow.log_params``.

    Values are stringified, secrets masked (:func:`amc.errors.mask_secrets`) and truncated
    to MLflow's limit; an empty mapping is kept as ``{}``
    (so ``env.options: {}`` is still visible). The one flattener of the project: training and
    every pipeline stage log their params through it.
    """
    out: dict[str, str] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping) and v:
            out.update(flatten_params(v, key + "."))
        else:
            out[key] = mask_secrets(str(v))[:PARAM_VALUE_LIMIT]
    return out
