"""Flow ``amc-train``: build the value dataset and train V_theta, as the DVC stages do.

The two tasks run the DVC stages ``dataset`` and ``train`` themselves (``dvc repro -s``), so the
flow executes exactly the stage commands (``amc dataset``, ``amc train``: the value-model
library) and ``dvc.lock`` records their lineage. DVC calls are serialised (a file lock: one DVC
process per repository). Training registers the model with the alias ``challenger``.
"""

from __future__ import annotations

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from flows._common import run_dvc


@task(name="dvc-stage", retries=1, retry_delay_seconds=5, cache_policy=NO_CACHE)
def dvc_stage(stage: str, root: str = ".") -> str:
    """``dvc repro -s <stage>`` (serialised); returns DVC's output."""
    return run_dvc(["repro", "-s", stage], root)


@task(name="dvc-commit", retries=1, retry_delay_seconds=5, cache_policy=NO_CACHE)
def dvc_commit(stage: str, root: str = ".") -> str:
    """Record outputs a flow produced outside DVC in ``dvc.lock`` (``dvc commit -f``)."""
    return run_dvc(["commit", "-f", stage], root)


@flow(name="amc-train", log_prints=True)
def train_flow(root: str = ".") -> None:
    """Dataset then training (registers the challenger)."""
    for stage in ("dataset", "train"):
        print(dvc_stage(stage, root)[-400:])


if __name__ == "__main__":
    train_flow()
