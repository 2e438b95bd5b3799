"""The sweep's learned V_theta: planner-mix rollouts of train tasks -> head-mode MiniLM value.

Data: for every value-training task (TextCraft's train split minus the sweep's validation
tail, :func:`amc.sweeps.cell.value_train_tasks`), ``rollouts`` independent episodes of the
``planner-mix`` prior at each skill of ``q_grid`` (the sweep varies q and one value serves every
cell), budget = plan length + ``slack``, binary reward. Each visited state becomes a row whose
target is the realised future reward (:func:`amc.value.data.build_dataset`, split by task).

Training: head mode (frozen MiniLM encoder, features cached on disk, only the head trains),
first on nested subsets of ``sizes`` states -- value quality (Pearson, AUC of success,
calibration) vs dataset size, one MLflow run per size (:func:`amc.value.scale.quality_vs_size`)
-- then on all training states, saved to ``out_dir`` for the cells. ``quality_file`` keeps the
curve, the final model's held-out metrics and its content hash (``model_hash``, the
``value_model_hash`` of the cells that use it), committed as evidence.
Run as ``python -m amc.sweeps.value`` in ``sweeps/``.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from amc.config import SMCConfig
from amc.priors.planner_mix import PlannerMixOptions, PlannerMixPrior, load_planner
from amc.smc.sampler import run_task
from amc.sweeps.cell import dir_hash
from amc.sweeps.config import CellParams, ValueParams, load_sweep_params
from amc.sweeps.tasks import make_suite, task_budget, value_train_tasks
from amc.types import History
from amc.value.data import DatasetOptions, build_dataset, histories_from_record
from amc.value.simple import ZeroValue


async def rollouts(vp: ValueParams, cell: CellParams) -> list[History]:
    """Prior episodes on the value-training tasks, every q of the grid (Best-of-G records)."""
    suite = make_suite(cell)
    out: list[History] = []
    for qi, q in enumerate(vp.q_grid):
        prior = PlannerMixPrior(suite, load_planner("textcraft"), PlannerMixOptions(q=q))
        for task in value_train_tasks(suite, cell.val_tasks):
            smc = SMCConfig(n_particles=vp.rollouts, max_steps=task_budget(suite, task, vp.slack),
                            resample="never")
            res = await run_task(suite=suite, prior=prior, value=ZeroValue(), task_id=task,
                                 smc=smc, seed=vp.seed * 1000 + qi, method="bon")
            out.extend(histories_from_record(res.to_dict()))
        prior.replay.clear()
    return out


def train_config(vp: ValueParams, cache_dir: Path, track: bool) -> Any:
    """Head-mode training of MiniLM on the sweep's data (CPU)."""
    from amc.value.features import HeadConfig
    from amc.value.model import ModelConfig
    from amc.value.train import TrainConfig

    return TrainConfig(model=ModelConfig(max_length=vp.max_length), mode="head",
                       head=HeadConfig(cache_dir=cache_dir, epochs=vp.epochs), seed=vp.seed,
                       device="cpu", env="textcraft", experiment="amc-sweeps-value",
                       tracking_uri=vp.tracking_uri, track=track, register_model=False)


def dataset_options(vp: ValueParams) -> DatasetOptions:
    """Rendering (budget = max_length - 4 tokens; the goal and the latest state stay)."""
    from amc.value.render import RenderOptions

    render = RenderOptions(env="textcraft", history_k=vp.history_k, max_tokens=vp.max_length - 4,
                           preamble="Predict the future reward.", show_budget=vp.show_budget)
    return DatasetOptions(render=render, val_fraction=0.15, test_fraction=0.15, seed=vp.seed)


def run(vp: ValueParams, cell: CellParams, track: bool = True, progress: bool = False
        ) -> dict[str, Any]:
    """Collect, build, curve, final model; returns (and writes) the quality record."""
    from amc.value.scale import quality_vs_size
    from amc.value.train import train

    work = Path(vp.work_dir)
    ds = work / "dataset"
    card = build_dataset(asyncio.run(rollouts(vp, cell)), ds, dataset_options(vp))
    cfg = train_config(vp, work / "feature-cache", track)
    curve = quality_vs_size(ds, list(vp.sizes), cfg, work / "quality", progress=progress)
    final = train(ds, cfg, vp.out_dir)
    record = {"data": {"q_grid": list(vp.q_grid), "rollouts": vp.rollouts, "slack": vp.slack,
                       "splits": {s: {k: v for k, v in d.items() if k != "target_histogram"}
                                  for s, d in card["splits"].items()}},
              "curve": curve["rows"], "held_out": curve["held_out"],
              "final": {k: float(v) for k, v in final.best.items()},
              "mlflow_run_id": final.run_id, "model_hash": dir_hash(vp.out_dir)}
    Path(vp.quality_file).parent.mkdir(parents=True, exist_ok=True)
    Path(vp.quality_file).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return record


def main() -> None:
    params = load_sweep_params()
    rec = run(params.value, params.cell, progress=False)
    print(json.dumps(rec["final"], indent=1))


if __name__ == "__main__":
    main()
