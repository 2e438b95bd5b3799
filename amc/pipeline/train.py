"""Stage ``train``: the value model V_theta on the dataset, registered with alias challenger.

The training itself is :func:`amc.value.train.train` (its own MLflow run in experiment
``amc-value``: params, curves, the pyfunc model). This stage registers the logged model under
:func:`~amc.pipeline.params.model_name` (``amc-value-<env>`` for ``params.yaml`` runs, a name of
its own for overridden runs) with the alias ``challenger``, tags the run with its DVC input, and
writes ``train.metrics_file``: the version and the best epoch's validation AUC and MAE, for
``dvc metrics diff`` (every validation metric: ``<train.out_dir>/metrics.json``).

Lineage: the training run is named ``train r<round> · dataset <hash>``, tagged with the round,
DVC experiment and Prefect flow run, and logs the dataset directory as its MLflow input with the
DVC hash (``dvc.lock``) as digest; the version's description says what data and round it saw.
With rounds, the result is stored in the round's ledger, and a resumed round whose dataset is
unchanged reuses the version it already registered instead of training twice.

It refuses a dataset built from another environment's rollouts (``source.json`` of the dataset
stage): a model registered for one benchmark is never trained on another's data.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

from amc.pipeline import rounds
from amc.pipeline.artifacts import DETAIL, source, train_headline
from amc.pipeline.lineage import (
    context_tags,
    dvc_hash,
    dvc_input_hashes,
    log_dataset_input,
    run_name,
    source_tags,
)
from amc.pipeline.params import PipelineParams, model_name, stage_main
from amc.progress import quiet_stderr
from amc.results import write_json_atomic

CHALLENGER = "challenger"


def config(p: PipelineParams) -> Any:
    """The :class:`~amc.value.train.TrainConfig` of the ``train`` section (no registration:
    this stage registers under its own name)."""
    from amc.value.train import TrainConfig

    t = p.train
    return TrainConfig(env=p.env.name, epochs=t.epochs, lr=t.lr, batch_size=t.batch_size,
                       seed=t.seed, patience=t.patience, tracking_uri=p.mlflow_uri,
                       register_model=False, mode=t.mode,
                       head={"objective": t.objective,
                             "temperature": {"fit": t.fit_temperature}},
                       model={"max_length": t.max_length, "num_layers": t.num_layers})


def check_source(p: PipelineParams) -> dict[str, Any]:
    """The dataset's ``source.json``; error when its environment is not ``env.name``."""
    src = source(p.dataset.out_dir)
    if src.get("env") != p.env.name:
        raise ValueError(f"{p.dataset.out_dir} was built from {src.get('env')!r} rollouts; "
                         f"refusing to train {model_name(p)!r} (env.name={p.env.name!r}) on it")
    return src


def register(p: PipelineParams, model_uri: str, src: dict[str, Any],
             digest: str | None = None) -> str:
    """Register ``model_uri`` under the run's model name, alias ``challenger``; the version.

    The version gets tags (env, prior, dataset hash and DVC digest, round) and a description
    of its data; the promote stage adds the gate's evidence to it.
    """
    import mlflow

    name = model_name(p)
    client = mlflow.MlflowClient()
    with quiet_stderr():
        version = str(mlflow.register_model(model_uri, name).version)
    if not client.get_registered_model(name).description:  # the registry's first page says
        client.update_registered_model(name, description=(  # what the model is
            f"AMC value model for {p.env.name}: V(s), the reward still to come from an agent "
            "state, which twists SMC over the prior's trajectories. Alias challenger: the "
            "latest trained version; champion: the one the promotion gate chose."))
    client.set_registered_model_alias(name, CHALLENGER, version)
    for key, val in (("amc.env", p.env.name), ("amc.prior", src.get("prior")),
                     ("dataset_hash", src.get("content_hash")), ("dataset_dvc", digest),
                     ("amc.round", src.get("round"))):
        if val is not None:
            client.set_model_version_tag(name, version, key, str(val))
    client.update_model_version(name, version, description=describe(p, src, digest))
    return version


def open_round_of(p: PipelineParams, src: dict[str, Any]) -> int | None:
    """The dataset's round while it is open, else None: a closed round's ledger is final, so a
    model trained on its data later (a ``dvc exp run``, say) is tagged and named as of no
    round, not as one the ledger does not list."""
    r, rec = src.get("round"), rounds.current_round(p) if rounds.enabled(p) else None
    return None if r is None or rec is None or int(rec["round"]) != int(r) else int(r)


def describe(p: PipelineParams, src: dict[str, Any], digest: str | None) -> str:
    """The model version's description: what data, which round."""
    where = "" if src.get("round") is None else (
        f" Round {src['round']} (trained on rounds {src.get('rounds')}).")
    return (f"Value head for {p.env.name}, trained on {src.get('records')} {src.get('prior')} "
            f"rollout records of split {src.get('split')}: {p.dataset.out_dir} version "
            f"{digest or src.get('content_hash')}.{where}")


def reuse(p: PipelineParams, src: dict[str, Any]) -> dict[str, Any] | None:
    """The open round's training result when it was trained on this very dataset (a resumed
    round does not train and register twice); None otherwise."""
    rec = rounds.current_round(p) if rounds.enabled(p) else None
    done = (rec or {}).get("steps", {}).get("train")
    if not done or done.get("dataset_hash") != src.get("content_hash"):
        return None
    import mlflow

    mlflow.MlflowClient().set_registered_model_alias(done["model"], CHALLENGER, done["version"])
    return dict(done["result"])


FINGERPRINT_TAG = "amc.train_fingerprint"
"""Model-version tag: what the version was trained from (:func:`fingerprint`)."""


def code_digest(root: Path | None = None) -> str:
    """sha256 over every ``.py`` file of the ``amc`` package (path and bytes, sorted)."""
    root = root or Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for f in sorted(root.rglob("*.py")):
        if "__pycache__" not in f.parts:
            h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def fingerprint(p: PipelineParams, src: dict[str, Any]) -> str:
    """What a training run depends on: the dataset's content, the env, the ``train`` params
    and the code. Equal fingerprints mean a retraining would repeat the same work."""
    t = p.train.model_dump(mode="json", exclude={"out_dir", "metrics_file"})
    key = {"dataset": src.get("content_hash"), "env": p.env.name, "model": model_name(p),
           "train": t, "code": code_digest()}
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:32]


def unchanged(p: PipelineParams, fp: str) -> dict[str, Any] | None:
    """The current challenger's result when it was trained from this very fingerprint and its
    outputs are still here (``train.out_dir``, the metrics file); None otherwise."""
    import mlflow
    from mlflow.exceptions import MlflowException

    detail = p.train.out_dir / DETAIL
    if not detail.is_file() or not p.train.metrics_file.is_file():
        return None
    name = model_name(p)
    client = mlflow.MlflowClient(tracking_uri=p.mlflow_uri)
    try:  # no such model or alias yet: train
        mv = client.get_model_version_by_alias(name, CHALLENGER)
    except MlflowException:
        return None
    version, tags = str(mv.version), mv.tags or {}
    have = json.loads(detail.read_text())
    if tags.get(FINGERPRINT_TAG) != fp or str(have.get("version")) != str(version):
        return None
    return {"model": name, "version": str(version), "run_id": None, "reused": True,
            **{k: v for k, v in have.items() if k != "version"}}


def run(p: PipelineParams) -> dict[str, Any]:
    """The stage: train, register the challenger, write the metrics file; returns them.

    Nothing new (the challenger was trained from the same dataset, params and code, and its
    outputs are in place): nothing is trained or registered, the result says ``reused``.
    """
    from amc.value.train import train
    from amc.value.train_run import TIMING_SUFFIXES

    src = check_source(p)
    src = {**src, "round": open_round_of(p, src)}
    cfg = config(p)
    if (done := reuse(p, src)) is not None:
        return done
    fp = fingerprint(p, src)
    if (same := unchanged(p, fp)) is not None:
        return same
    res = train(p.dataset.out_dir, cfg, p.train.out_dir)
    if res.model_uri is None or res.run_id is None:
        raise RuntimeError("training logged no model (tracking disabled?)")
    digest = dvc_hash(p.dataset.out_dir) or src["content_hash"]
    version = register(p, res.model_uri, src, digest)
    import mlflow

    mlflow.MlflowClient().set_model_version_tag(model_name(p), version, FINGERPRINT_TAG, fp)
    label(p, res.run_id, src, digest)
    metrics = {k: float(v) for k, v in res.best.items() if math.isfinite(float(v))}
    write_json_atomic(p.train.out_dir / DETAIL, {"version": int(version), **{  # no run times:
        k: v for k, v in metrics.items() if not k.endswith(TIMING_SUFFIXES)}})  # timing/
    write_json_atomic(p.train.metrics_file, train_headline(version, metrics))
    out = {"model": model_name(p), "version": version, "run_id": res.run_id, **metrics}
    r = src.get("round")
    if r is not None and rounds.current_round(p) is not None:
        rounds.record_step(p, int(r), "train", {
            "model": model_name(p), "version": version, "run_id": res.run_id,
            "dataset_hash": src["content_hash"], "dataset_dvc": digest, "result": out})
    return out


def label(p: PipelineParams, run_id: str, src: dict[str, Any], digest: str) -> None:
    """Lineage of the training run: tags, a readable name, the dataset version as its input."""
    import mlflow

    r = src.get("round")
    client = mlflow.MlflowClient()
    tags = {"amc.stage": "train", "amc.model_name": model_name(p), "dataset_dvc": digest,
            # the dataset as its stage's line names it (content hash; dataset_dvc: DVC's)
            "mlflow.runName": run_name("train", r, f"dataset {src['content_hash'][:8]} · lr "
                                              f"{p.train.lr:g} · {p.train.epochs} ep"),
            **context_tags(r), **dvc_input_hashes([str(p.dataset.out_dir)]),
            **source_tags("train")}  # not the path MLflow took from sys.argv[0]
    for key, val in tags.items():
        client.set_tag(run_id, key, val)
    log_dataset_input(run_id, p.dataset.out_dir, digest, context="training", round_=r)


def line(out: dict[str, Any]) -> str:
    """The stage's one-line result on the console: the version and its validation figures."""
    figs = ", ".join(f"{k} {out[f'best_val_{k}']:.3f}" for k in ("auc", "mae", "pearson")
                     if isinstance(out.get(f"best_val_{k}"), float))
    if out.get("reused"):
        return (f"train: nothing new (dataset, params and code unchanged): {out['model']} "
                f"v{out['version']} stays challenger, nothing trained or registered")
    return (f"train: registered {out['model']} v{out['version']} as challenger; validation "
            f"{figs or 'figures not computed'}")


if __name__ == "__main__":  # the DVC stage's cmd
    stage_main(lambda p: print(line(run(p)), flush=True))
