"""The sweep's learned V_theta: planner-mix rollouts of train tasks -> head-mode MiniLM value.

Data: for every value-training task (TextCraft's train split minus the sweep's validation
sample, :func:`studies.sweeps.tasks.value_train_tasks`), ``rollouts`` independent episodes of the
``planner-mix`` prior at each skill of ``q_grid`` (the sweep varies q and one value serves every
cell), budget = plan length + ``slack``, binary reward. Each visited state becomes a row whose
target is the realised future reward (:func:`amc.value.data.build_dataset`, split by task).

Training: head mode (frozen MiniLM encoder, features cached on disk, only the head trains),
first on nested subsets of ``sizes`` states -- value quality (Pearson, AUC of success,
calibration) vs dataset size, one MLflow run per size (:func:`amc.value.scale.quality_vs_size`)
-- then on all training states, saved to ``out_dir`` for the cells. ``quality_file`` keeps the
curve, the final model's held-out metrics, the same metrics of the Monte-Carlo rollout value on
the same held-out states (``ceiling``: what a perfect V_theta would approach) and the model's
content hash (``model_hash``, the ``value_model_hash`` of the cells that use it), committed as
evidence.

WebShop (``--section value_webshop``, stage ``value_webshop``): the same recipe on the cells'
benchmark (:mod:`studies.sweeps.bench`: the fixture catalog, the WebShop planner-mix prior) with
that section's own cell keys -- the WebShop cells' fixed budget (the environment's step limit,
so no plan length; ``show_budget`` stays off) and validation sample -- and the graded score as
the target (the forced buy's purchase, in [0, 1]); no doomed mask in the offline figures, and
only realised-return targets. The model directory gets ``sweep_split.json``, which a learned
WebShop cell checks against its own split (:func:`studies.sweeps.cell.check_value_split`).
Run as ``python -m studies.sweeps.value [--section value_webshop]`` in ``sweeps/``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from amc.config import SMCConfig
from amc.results import dumps
from amc.smc.sampler import run_task
from amc.types import History
from amc.value.data import (
    DatasetOptions,
    build_dataset,
    histories_from_record,
    load_dataset_dir,
    returns_to_go,
)
from amc.value.metrics import auc_within_by_step, value_metrics
from amc.value.rollout import RolloutValue, RolloutValueOptions
from amc.value.simple import ZeroValue
from studies.sweeps.bench import bench_prior, make_bench_suite, value_budget
from studies.sweeps.cell import CALIBRATION_FILE, SPLIT_FILE, dir_hash, split_record
from studies.sweeps.config import CellParams, SweepParams, ValueParams, load_sweep_params
from studies.sweeps.tasks import value_train_tasks


async def rollouts(vp: ValueParams, cell: CellParams) -> list[tuple[float, History]]:
    """(q, episode) of the prior on the value-training tasks, every q of the grid."""
    suite = make_bench_suite(cell)
    out: list[tuple[float, History]] = []
    for qi, q in enumerate(vp.q_grid):
        prior = bench_prior(suite, cell, q, vp.menu_form)
        for task in value_train_tasks(suite, cell)[: vp.max_tasks]:
            budget = value_budget(suite, cell, vp, task)
            smc = SMCConfig(n_particles=vp.rollouts, max_steps=budget, resample="never")
            res = await run_task(suite=suite, prior=prior, value=ZeroValue(), task_id=task,
                                 smc=smc, seed=vp.seed * 1000 + qi, method="bon")
            out.extend((q, h) for h in histories_from_record(res.to_dict()))
        prior.replay.clear()
    return out


async def ceiling(tagged: list[tuple[float, History]], tasks: set[str], vp: ValueParams,
                  cell: CellParams, by_key: dict[Any, float] | None = None) -> dict[str, Any]:
    """The Monte-Carlo rollout value's quality on the held-out states: the learned value's ceiling.

    Every state of every held-out episode (tasks ``tasks``) is scored by p(s) = the mean
    future reward of ``cell.rollouts`` rollouts of the prior *at the episode's own q* (the
    ``rollout`` value of the cells, which knows the state and the skill exactly), then measured
    with the learned value's metrics against the same realised targets. ``by_key`` (when
    given) receives each state's p by (task, trajectory, step) row key.
    """
    from amc.value.targets import keyed

    traj = {id(h): g for _, g, h in keyed([h for _, h in tagged])}
    suite = make_bench_suite(cell)
    threshold = dataset_options(vp).success_threshold  # the dataset's definition of success
    cols: dict[str, list[Any]] = {k: [] for k in ("pred", "target", "so_far", "success", "g")}
    for q in sorted({q for q, _ in tagged}):
        prior = bench_prior(suite, cell, q, vp.menu_form)
        for h in (h for qq, h in tagged if qq == q and h.task_id in tasks):
            rv = RolloutValue(suite, prior, 1.0, RolloutValueOptions(
                n_rollouts=cell.rollouts, max_steps=h.budget or len(h.steps), seed=vp.seed))
            rewards = [s.reward for s in h.steps]
            togo = returns_to_go(rewards)
            for t in range(len(h.steps) + 1):
                r, _ = await rv.returns(h.prefix(t))
                cols["pred"].append(float(r.mean()) if r.size else 0.0)
                if by_key is not None:
                    by_key[(h.task_id, traj[id(h)], t)] = cols["pred"][-1]
                cols["target"].append(togo[t])
                cols["so_far"].append(float(sum(rewards[:t])))
                cols["success"].append(sum(rewards) >= threshold)
                cols["g"].append((h.task_id, t))
        prior.replay.clear()
    pred, so_far, ok = (np.array(cols[k]) for k in ("pred", "so_far", "success"))
    m = value_metrics(pred, np.array(cols["target"]), so_far, ok, cols["g"])
    by_step = auc_within_by_step(pred, so_far, ok, cols["g"])
    return {**m, "states": float(len(pred)), "rollouts": float(cell.rollouts),
            "auc_within_by_step": by_step}


def train_config(vp: ValueParams, cache_dir: Path, track: bool, env: str = "textcraft") -> Any:
    """Head-mode training of MiniLM on the sweep's data (CPU) of benchmark ``env``."""
    from amc.value.features import HeadConfig
    from amc.value.model import ModelConfig
    from amc.value.temperature import TemperatureConfig
    from amc.value.train import TrainConfig

    head = HeadConfig(cache_dir=cache_dir, epochs=vp.epochs, objective=vp.objective,
                      temperature=TemperatureConfig(fit=vp.fit_temperature))
    return TrainConfig(model=ModelConfig(max_length=vp.max_length, loss=vp.loss), mode="head",
                       head=head, seed=vp.seed,
                       device="cpu", env=env, experiment="amc-sweeps-value",
                       tracking_uri=vp.tracking_uri, track=track, register_model=False)


def dataset_options(vp: ValueParams, env: str = "textcraft") -> DatasetOptions:
    """Rendering of benchmark ``env``'s states (budget = max_length - 4 tokens; the goal and
    the latest state stay; steps left only with ``show_budget``)."""
    from amc.value.render import RenderOptions

    render = RenderOptions(env=env, history_k=vp.history_k, max_tokens=vp.max_length - 4,
                           preamble="Predict the future reward.", show_budget=vp.show_budget,
                           show_summary=vp.show_summary)  # off in every kept sweep value
    return DatasetOptions(render=render, val_fraction=0.15, test_fraction=0.15, seed=vp.seed)


@contextmanager
def phase(clock: dict[str, dict[str, float]] | None, name: str) -> Iterator[None]:
    """Record the wall and CPU seconds (this process, all its threads) of a block in
    ``clock[name]`` (nothing when ``clock`` is None)."""
    wall, cpu = time.perf_counter(), time.process_time()
    yield
    if clock is not None:
        clock[name] = {"wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu}


def run(vp: ValueParams, cell: CellParams, track: bool = True, progress: bool = False,
        clock: dict[str, dict[str, float]] | None = None) -> dict[str, Any]:
    """Collect, build, curve, final model; returns (and writes) the quality record.

    ``clock`` (optional) receives each phase's wall and CPU seconds (:func:`phase`):
    ``benchmarks/bench_value_stage.py`` times the stage with it."""
    from amc.value.scale import quality_vs_size
    from amc.value.train import train
    from studies.sweeps.value_targets import apply_targets, held_out_tasks, smc_histories

    work = Path(vp.work_dir)
    ds = work / "dataset"

    if cell.benchmark != "textcraft" and (vp.smc_states or vp.state_rollouts
                                          or vp.targets != "return"):
        raise ValueError("the value options smc_states, state_rollouts and td targets are "
                         "TextCraft's; a " + cell.benchmark + " value trains on returns")
    opts = dataset_options(vp, cell.benchmark)
    with phase(clock, "rollouts"):
        tagged = asyncio.run(rollouts(vp, cell))
    smc: set[int] = set()
    if vp.smc_states:  # AMC's visited states of the train/validation tasks only
        held = held_out_tasks(tagged, opts)
        with phase(clock, "smc_states"):
            extra = [(q, h) for q in vp.q_grid for h in asyncio.run(smc_histories(vp, cell, q))
                     if h.task_id not in held]
        smc = set(range(len(tagged), len(tagged) + len(extra)))
        tagged += extra
    with phase(clock, "dataset"):
        card = build_dataset([h for _, h in tagged], ds, opts)
    cfg = train_config(vp, work / "feature-cache", track, cell.benchmark)
    with phase(clock, "targets"):
        targets = apply_targets(ds, tagged, smc, vp, cell, cfg, work,
                                held_out_tasks(tagged, opts))
    with phase(clock, "curve"):  # embeds every distinct state once (the shared cache)
        curve = quality_vs_size(ds, list(vp.sizes), cfg, work / "quality", progress=progress)
    with phase(clock, "final"):
        final = train(ds, cfg, vp.out_dir)
    if cell.benchmark != "textcraft":  # which cells may use it (TextCraft's outputs unchanged)
        (Path(vp.out_dir) / SPLIT_FILE).write_text(json.dumps(split_record(cell)) + "\n")
    with phase(clock, "calibration"):
        calibration = fit_calibration(vp, load_dataset_dir(ds)[0]["validation"])
    held = load_dataset_dir(ds)[0][curve["held_out"]]
    ceiling_p: dict[Any, float] = {}
    upper = None
    if vp.ceiling:
        with phase(clock, "ceiling"):
            upper = asyncio.run(ceiling(tagged, set(held["task_id"]), vp, cell, ceiling_p))
    with phase(clock, "offline"):
        offline = offline_record(vp, cell, tagged, held, ceiling_p)
    record = {"params": vp.model_dump(mode="json"),
              "data": {"q_grid": list(vp.q_grid), "rollouts": vp.rollouts, "slack": vp.slack,
                       "menu_form": vp.menu_form, "fixed_budget": vp.fixed_budget,
                       "show_budget": vp.show_budget,
                       "splits": {s: {k: v for k, v in d.items() if k != "target_histogram"}
                                  for s, d in card["splits"].items()}},
              "curve": curve["rows"], "held_out": curve["held_out"],
              "final": {k: float(v) for k, v in final.best.items()},
              "calibration": calibration, "targets": targets, "offline": offline,
              "mlflow_run_id": final.run_id, "model_hash": dir_hash(vp.out_dir),
              "ceiling": upper}
    if cell.benchmark != "textcraft":
        record.update(benchmark=cell.benchmark, split=split_record(cell))
    Path(vp.quality_file).parent.mkdir(parents=True, exist_ok=True)
    Path(vp.quality_file).write_text(dumps(record, indent=1, sort_keys=True) + "\n")  # strict
    return record


def offline_record(vp: ValueParams, cell: CellParams, tagged: list[tuple[float, History]],
                   held: Any, ceiling_p: dict[Any, float]) -> dict[str, Any]:
    """Offline figures of the final value (calibrated p) and the ceiling on the held-out
    states (:mod:`studies.sweeps.offline`)."""
    from amc.value.scorers import LearnedValue
    from studies.sweeps.cell import load_calibration
    from studies.sweeps.offline import held_out_figures

    p = np.asarray(LearnedValue.load(vp.out_dir, device="cpu").score_texts(list(held["text"])))
    cal = load_calibration(vp.out_dir)
    p = np.clip(cal(p) if cal is not None else p, 0.0, 1.0)
    keys = list(zip(held["task_id"], held["traj"], held["step"], strict=True))
    learned = dict(zip(keys, map(float, p), strict=True))
    suite = make_bench_suite(cell) if cell.benchmark == "textcraft" else None  # doomed: TextCraft
    values = {"learned": learned, "ceiling": ceiling_p} if ceiling_p else {"learned": learned}
    return held_out_figures(suite, [h for _, h in tagged], held, values, vp.menu_form)


def fit_calibration(vp: ValueParams, val: Any) -> dict[str, Any]:
    """Fit ``vp.calibration`` on the validation states' (prediction, binary outcome) and save
    it as ``calibration.json`` in the model directory (nothing written for ``none``)."""
    from amc.value.calibration import fit
    from amc.value.scorers import LearnedValue

    if vp.calibration == "none":
        return {"method": "none", "params": {}}
    model = LearnedValue.load(vp.out_dir, device="cpu")
    p = np.asarray(model.score_texts(list(val["text"])), float)
    cal = fit(vp.calibration, p, np.asarray(val["target"], float) >= 0.5).to_dict()
    (Path(vp.out_dir) / CALIBRATION_FILE).write_text(json.dumps(cal, indent=1) + "\n")
    return cal


def section(params: SweepParams, name: str) -> tuple[ValueParams, CellParams]:
    """A value stage's (value, cell) parameters: ``value`` -> TextCraft's (the sweep's
    ``value`` and ``cell``), ``value_webshop`` / ``value_sciworld`` -> that section's own."""
    if name == "value":
        return params.value, params.cell
    if name in BENCH_SECTIONS:
        sec = getattr(params, name)
        return sec.value, sec.cell
    raise ValueError(f"no value section {name!r}")


BENCH_SECTIONS = ("value_webshop", "value_sciworld")
"""The value stages of the other benchmarks (their params sections)."""


def main(argv: list[str] | None = None) -> None:
    """``python -m studies.sweeps.value``: TextCraft's value (params ``value`` and ``cell``);
    ``--section value_webshop`` / ``value_sciworld``: that benchmark's (the section's own
    ``value`` and ``cell``)."""
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--section", choices=("value", *BENCH_SECTIONS), default="value")
    args = ap.parse_args(argv)
    rec = run(*section(load_sweep_params(), args.section), progress=False)
    print(json.dumps(rec["final"], indent=1))


if __name__ == "__main__":
    main()
