"""Flow ``amc-grpo``: the optional GRPO stage (:mod:`amc.grpo.stage`) as Prefect tasks.

The same four steps as ``dvc --cd grpo repro``: train (registers ``amc-policy-<env>``),
evaluate the frozen prior, evaluate the GRPO policy, compare. The frozen evaluation does not
need the policy, so it is submitted first and runs while GRPO trains (with a thread runner of
two workers). Tasks pass paths, never trajectories. With ``grpo.enabled: false`` the flow writes
the stage's note and returns without training.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from amc.grpo import stage as grpo
from flows._common import default_runner
from flows._log import say


@task(name="grpo-train", cache_policy=NO_CACHE)
def train_task(params_path: str) -> dict[str, Any]:
    """Step 1: the GRPO policy; returns its adapter folder, costs and registered version."""
    return grpo.train_policy(grpo.load_stage_params(params_path))


@task(name="grpo-evaluate", retries=1, retry_delay_seconds=5, cache_policy=NO_CACHE)
def evaluate_task(params_path: str, adapter: str | None) -> str:
    """Steps 2-3: one side's ``amc run`` (resumable); returns its summary.json."""
    sp = grpo.load_stage_params(params_path)
    return str(grpo.evaluate(grpo.eval_config(sp, adapter)))


@task(name="grpo-compare", cache_policy=NO_CACHE)
def compare_task(params_path: str, frozen: str, policy: str) -> dict[str, Any]:
    """Step 4: comparison.md and the metrics file, after both evaluations."""
    return grpo.compare(grpo.load_stage_params(params_path))


@flow(name="amc-grpo", log_prints=False, task_runner=default_runner())
def grpo_flow(params_path: str = "params.yaml") -> dict[str, Any]:
    """Train GRPO, evaluate it and the frozen prior on the same tasks and seeds, compare."""
    sp = grpo.load_stage_params(params_path)
    if not sp.enabled:
        say("grpo.enabled is false: nothing to train")
        return grpo.run(sp)
    frozen = evaluate_task.submit(params_path, None)
    trained = train_task(params_path)
    say(f"policy {trained.get('model')} v{trained.get('version')}: {trained['adapter']}")
    policy = evaluate_task(params_path, str(Path(trained["adapter"]).resolve()))
    res = compare_task(params_path, frozen.result(), policy)
    say((sp.out_dir / "comparison.md").read_text())
    return res


if __name__ == "__main__":
    grpo_flow()
