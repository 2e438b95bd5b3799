"""Flow ``amc-train``: build the value dataset and train V_theta, as the DVC stages do.

Two tasks, each running its stage's ``run`` (:func:`amc.pipeline.dataset.run`,
:func:`amc.pipeline.train.run`: the functions ``dvc repro`` runs) with the flow's params and
overrides, then recording the outputs in ``dvc.lock`` (:func:`flows._common.record`). Training
registers the model with the alias ``challenger`` under the run's model name.
"""

from __future__ import annotations

from typing import Any

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from amc.pipeline import dataset, train
from flows._common import params, record
from flows._log import say


@task(name="dataset", retries=1, retry_delay_seconds=5, cache_policy=NO_CACHE)
def dataset_task(params_path: str, overrides: list[str]) -> str:
    """The dataset stage; logs its one-line result (left-out tasks named), returns the
    dataset's content hash."""
    card = dataset.run(params(params_path, overrides))
    say(dataset.line(card))
    return str(card["content_hash"])


@task(name="train", retries=1, retry_delay_seconds=5, cache_policy=NO_CACHE)
def train_task(params_path: str, overrides: list[str]) -> dict[str, Any]:
    """The train stage; returns the registered model name, version and metrics."""
    return train.run(params(params_path, overrides))


@flow(name="amc-train", log_prints=False)
def train_flow(params_path: str = "params.yaml", overrides: list[str] | None = None
               ) -> dict[str, Any]:
    """Dataset then training (registers the challenger); returns the train stage's result."""
    ov = list(overrides or [])
    dataset_task(params_path, ov)  # it logs the stage's own line
    record("dataset", params_path, ov)
    res = train_task(params_path, ov)
    record("train", params_path, ov)
    say(train.line(res))
    return res


if __name__ == "__main__":
    train_flow()
