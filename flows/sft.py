"""Flow ``amc-sft``: the SFT stage (:mod:`amc.sft.stage`) as Prefect tasks.

The same steps as ``dvc --cd sft repro``: the planner's demonstrations (written with their
hash), then the resumable LoRA run with its checkpoints, then the MLflow run and the registered
``amc-policy-<env>`` version. Tasks pass paths and hashes, never the demonstrations.
"""

from __future__ import annotations

from typing import Any

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from amc.sft import stage
from flows._log import say


@task(name="sft-demos", cache_policy=NO_CACHE)
def demos_task(params_path: str) -> str:
    """Step 1: the demonstrations; returns their sha256."""
    _, digest = stage.prepare_demos(stage.load_options(params_path), log=say)
    return digest


@task(name="sft-train", cache_policy=NO_CACHE)
def train_task(params_path: str) -> dict[str, Any]:
    """Steps 2-3: train (resuming a killed run) and register; returns metrics.json's record."""
    return stage.run_sft(stage.load_options(params_path), log=say)


@flow(name="amc-sft", log_prints=False)
def sft_flow(params_path: str = "params.yaml") -> dict[str, Any]:
    """Behaviour cloning of the planner: demonstrations, LoRA run, registered version."""
    digest = demos_task(params_path)
    say(f"sft demonstrations sha256 {digest[:12]}")
    return train_task(params_path)


if __name__ == "__main__":
    sft_flow()
