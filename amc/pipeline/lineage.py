"""Lineage of pipeline runs: one MLflow experiment per stage kind, runs tagged with git + DVC.

DVC owns data lineage (``dvc.lock`` hashes every stage's inputs and outputs); MLflow owns runs
and models. To join the two, every stage run is tagged with the git commit (``git_commit``,
``git_dirty``), the hash of ``dvc.lock`` (``dvc_lock_sha256``; both from :mod:`amc.tracking`)
and, for each input path, the hash ``dvc.lock`` recorded when the stage that produces it last
ran (``dvc.input.<path>``). ``dvc repro``
writes a stage's lock entry as soon as it finishes, so the upstream entries are current when a
downstream stage starts.

Every run also carries ``amc.stage``, ``amc.round`` (with rounds), ``dvc.exp_name`` (under
``dvc exp run``) and ``prefect.flow_run_id`` (inside a Prefect flow run), a readable name
(``train r3 · dataset 1a2b3c4d``), and lasts as long as the stage's work (``started``).
Training and evaluation log the dataset version as an MLflow input (:func:`log_dataset_input`,
digest = the DVC hash of the dataset directory).

Tracking always uses a SQLite store (``sqlite:///mlruns/mlflow.db`` unless configured):
the plain file store refuses to start in MLflow 3.13+.

**Recording in DVC**, the one way AMC calls DVC (:func:`dvc_commit`: ``dvc commit -f <stage>``).
DVC refuses a second process in one repository ("Unable to acquire lock") instead of waiting,
so every DVC call made by AMC -- a flow's task recording its stage, ``python -m
amc.pipeline.round`` after each stage -- holds :func:`dvc_lock` (``.dvc/tmp/amc-flows.lock``)
and queues there instead.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from amc.errors import mask_secrets

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


def context_tags(round_: int | None = None) -> dict[str, str]:
    """Tags every pipeline run carries: round, DVC experiment, Prefect flow run (when any)."""
    tags: dict[str, str] = {}
    if round_ is not None:
        tags["amc.round"] = str(round_)
    if os.environ.get("DVC_EXP_NAME"):  # set by `dvc exp run`
        tags["dvc.exp_name"] = os.environ["DVC_EXP_NAME"]
    flow_run = prefect_flow_run_id()
    if flow_run:
        tags["prefect.flow_run_id"] = flow_run
    return tags


def prefect_flow_run_id() -> str | None:
    """The id of the Prefect flow run this code runs in (None outside a flow run)."""
    if "prefect" not in sys.modules and not os.environ.get("PREFECT__FLOW_RUN_ID"):
        return None  # not imported: no flow run here (and importing prefect costs seconds)
    try:
        from prefect.runtime import flow_run
    except ImportError:
        return None
    fid = flow_run.id
    return str(fid) if fid else None


def run_name(kind: str, round_: int | None = None, detail: str | None = None) -> str:
    """A readable run name: ``train r3 · <detail>`` (``kind`` alone without round/detail),
    ending in ``· <experiment>`` under ``dvc exp run`` (what differs between two runs)."""
    name = kind if round_ is None else f"{kind} r{round_}"
    name = f"{name} · {detail}" if detail else name
    exp = os.environ.get("DVC_EXP_NAME")
    return f"{name} · {exp}" if exp else name


def source_tags(kind: str) -> dict[str, str]:
    """Who ran what: MLflow's user and source tags, which a back-dated run (created through
    the client, see :func:`stage_run`) would otherwise lack."""
    import getpass

    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (some containers)
        user = "unknown"
    return {"mlflow.user": user, "mlflow.source.type": "LOCAL",
            "mlflow.source.name": f"python -m amc.pipeline.{kind}"}


@contextmanager
def stage_run(kind: str, *, params: Mapping[str, Any], inputs: Sequence[str | Path] = (),
              uri: str | None = None, tags: Mapping[str, str] | None = None,
              round_: int | None = None, started: float | None = None,
              detail: str | None = None) -> Iterator[Any]:
    """An MLflow run in the stage kind's experiment, tagged with git, DVC and round lineage.

    ``started`` (epoch seconds) back-dates the run's start to when the stage's work began, so
    a run recorded after work done elsewhere (shards, Prefect tasks) still lasts as long as
    the work did.
    """
    import mlflow

    exp_id = setup(uri, EXPERIMENTS.get(kind, f"amc-{kind}"))
    from amc.tracking import flatten_params, run_tags

    # git_commit, git_dirty, dvc_lock_sha256 (amc.tracking) + per-input dvc.lock hashes
    all_tags = {"amc.stage": kind, **source_tags(kind), **run_tags(),
                **dvc_input_hashes(inputs), **context_tags(round_)}
    all_tags.update({k: mask_secrets(str(v)) for k, v in (tags or {}).items()})
    name = run_name(kind, round_, detail)
    if started is None:
        ctx = mlflow.start_run(run_name=name, tags=all_tags)
    else:
        created = mlflow.MlflowClient().create_run(
            exp_id, start_time=int(started * 1000), tags=all_tags, run_name=name)
        ctx = mlflow.start_run(run_id=created.info.run_id)
    with ctx as run:
        mlflow.log_params(flatten_params(params))
        yield run


def dvc_hash(path: str | Path, lock: str | Path = "dvc.lock") -> str | None:
    """The hash ``dvc.lock`` records for an output or dependency path (None: not recorded)."""
    return dvc_input_hashes([path], lock).get(f"dvc.input.{Path(path)}")


def log_dataset_input(run_id: str, path: str | Path, digest: str, *, context: str,
                      round_: int | None = None) -> None:
    """``log_input`` of a dataset directory on a (possibly finished) run, digest = its hash.

    ``digest`` is the DVC hash of the directory when ``dvc.lock`` has it (else the dataset's
    own content hash): the same string ``dvc.lock`` and ``dvc exp show`` show for the version.
    """
    import mlflow
    from mlflow.data.meta_dataset import MetaDataset
    from mlflow.entities import DatasetInput, InputTag

    # MetaDataset's stubs mark `profile` abstract; the class itself implements it (None).
    ds = MetaDataset(source=_source(path), name=str(Path(path)),  # type: ignore[abstract]
                     digest=digest[:36])
    tags = [InputTag("mlflow.data.context", context)]
    if round_ is not None:
        tags.append(InputTag("amc.round", str(round_)))
    mlflow.MlflowClient().log_inputs(run_id, [DatasetInput(ds._to_mlflow_entity(), tags)])


def _source(path: str | Path) -> Any:
    import warnings

    from mlflow.data.dataset_source_registry import resolve_dataset_source

    with warnings.catch_warnings():  # "can be interpreted in multiple ways": both are local
        warnings.simplefilter("ignore", UserWarning)
        return resolve_dataset_source(str(Path(path).resolve()))


def annotate_version(name: str, version: str, line: str) -> None:
    """Append ``line`` to a registered model version's description (e.g. the gate's verdict)."""
    import mlflow

    client = mlflow.MlflowClient()
    old = client.get_model_version(name, version).description or ""
    client.update_model_version(name, version, description=f"{old}\n{line}".strip())


@contextmanager
def dvc_lock(root: str | Path = ".") -> Iterator[None]:
    """Hold an exclusive file lock around a DVC call: one DVC process per repo at a time."""
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


def dvc_commit(stage: str, root: str | Path = ".") -> bool:
    """``dvc commit -f <stage>`` (under the lock) when ``root`` is a DVC project, else False."""
    if not (Path(root) / ".dvc").is_dir():
        return False
    run_dvc(["commit", "-f", stage], root)
    return True
