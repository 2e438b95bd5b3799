"""Stage ``train``: the value model V_theta on the dataset, registered with alias challenger.

The training itself is :func:`amc.value.train.train` (its own MLflow run in experiment
``amc-value``: params, curves, the pyfunc model). This stage registers the logged model under
:func:`~amc.pipeline.params.model_name` (``amc-value-<env>`` for ``params.yaml`` runs, a name of
its own for overridden runs) with the alias ``challenger``, tags the run with its DVC input, and
writes ``train.metrics_file``: the best epoch's validation metrics, small and flat, for
``dvc metrics diff``.

It refuses a dataset built from another environment's rollouts (``source.json`` of the dataset
stage): a model registered for one benchmark is never trained on another's data.
"""

from __future__ import annotations

import math
from typing import Any

from amc.pipeline.dataset import source
from amc.pipeline.lineage import dvc_input_hashes
from amc.pipeline.params import PipelineParams, model_name, stage_main
from amc.results import write_json_atomic

CHALLENGER = "challenger"


def config(p: PipelineParams) -> Any:
    """The :class:`~amc.value.train.TrainConfig` of the ``train`` section (no registration:
    this stage registers under its own name)."""
    from amc.value.train import TrainConfig

    t = p.train
    return TrainConfig(env=p.env.name, epochs=t.epochs, lr=t.lr, batch_size=t.batch_size,
                       seed=t.seed, patience=t.patience, tracking_uri=p.mlflow_uri,
                       register_model=False,
                       model={"max_length": t.max_length, "num_layers": t.num_layers})


def check_source(p: PipelineParams) -> dict[str, Any]:
    """The dataset's ``source.json``; error when its environment is not ``env.name``."""
    src = source(p.dataset.out_dir)
    if src.get("env") != p.env.name:
        raise ValueError(f"{p.dataset.out_dir} was built from {src.get('env')!r} rollouts; "
                         f"refusing to train {model_name(p)!r} (env.name={p.env.name!r}) on it")
    return src


def register(p: PipelineParams, model_uri: str, src: dict[str, Any]) -> str:
    """Register ``model_uri`` under the run's model name, alias ``challenger``; the version."""
    import mlflow

    name = model_name(p)
    client = mlflow.MlflowClient()
    version = str(mlflow.register_model(model_uri, name).version)
    client.set_registered_model_alias(name, CHALLENGER, version)
    for key, val in (("amc.env", p.env.name), ("amc.prior", src.get("prior")),
                     ("dataset_hash", src.get("content_hash"))):
        client.set_model_version_tag(name, version, key, str(val))
    return version


def run(p: PipelineParams) -> dict[str, Any]:
    """The stage: train, register the challenger, write the metrics file; returns them."""
    import mlflow

    from amc.value.train import train

    src = check_source(p)
    cfg = config(p)
    res = train(p.dataset.out_dir, cfg, p.train.out_dir)
    if res.model_uri is None or res.run_id is None:
        raise RuntimeError("training logged no model (tracking disabled?)")
    version = register(p, res.model_uri, src)
    client = mlflow.MlflowClient()
    for key, val in {"amc.stage": "train", "amc.model_name": model_name(p),
                     **dvc_input_hashes([str(p.dataset.out_dir)])}.items():
        client.set_tag(res.run_id, key, val)
    metrics = {k: float(v) for k, v in res.best.items() if math.isfinite(float(v))}
    write_json_atomic(p.train.metrics_file, {"version": int(version), **metrics})
    return {"model": model_name(p), "version": version, "run_id": res.run_id, **metrics}


if __name__ == "__main__":  # the DVC stage's cmd
    stage_main(run)
