"""Value training at scale on CPU: head mode (frozen encoder, cached features) vs full fine-tuning.

One run on this machine measures:

1. data: TextCraft (dense reward) trajectories of the ``random-valid`` prior, Best-of-G over the
   first tasks of the train split (:mod:`benchmarks.value_scale_data`, resumable), turned into
   a value dataset (not timed as training; the time is reported);
2. the chosen variant (``--variant``) on >= 20,000 training states: wall and CPU time of the
   whole ``train()`` call (model load, embedding of every split, head epochs, save, MLflow
   logging) with a cold feature cache (an empty directory) and again with the warm cache;
3. encoder variants side by side on the same data (float vs dynamic-int8 encoder, all 6 or the
   first 3 or 2 MiniLM layers): each a cold head-mode ``train()`` on the first ``--compare-rows``
   training states and ``--compare-eval-rows`` validation/test states -- CPU time per embedded
   state and validation/test Pearson and AUC;
4. full fine-tuning's samples/s on a small subset (1 epoch), extrapolated -- labelled as such;
5. value quality (Pearson, AUC of success, ECE) against training-set size on nested subsets of
   the same training states, evaluated on the held-out test tasks
   (:func:`amc.value.scale.quality_vs_size`), written to ``docs/value-scale/`` and MLflow.

The machine is shared: wall times include other people's jobs. Next to each wall time the
script records the load average and the CPU time (user + system, all threads) of this process:
``CPU s / 2`` is the wall time the same work needs on 2 dedicated cores at best (a lower
bound). Results go to the ``value-scale`` section of docs/benchmarks.md, written by this script.

    python -m benchmarks.bench_value_scale [--variant int8-l3] [--train-states 20000]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import time
from pathlib import Path
from typing import Any

import torch

from amc.value.data import DatasetOptions, build_dataset, load_dataset_dir, read_trajectories
from amc.value.features import HeadConfig
from amc.value.model import ModelConfig
from amc.value.render import RenderOptions
from amc.value.scale import quality_vs_size
from amc.value.train import TrainConfig, train
from benchmarks._report import write_section
from benchmarks.value_scale_data import CollectOptions, collect
from benchmarks.value_scale_report import Timed, report

ASSETS = Path(__file__).resolve().parent.parent / "docs" / "value-scale"
# name -> (model.quantize, model.num_layers); None = all six MiniLM layers.
VARIANTS: dict[str, tuple[str, int | None]] = {
    "float": ("none", None), "int8": ("int8-dynamic", None),
    "float-l3": ("none", 3), "int8-l3": ("int8-dynamic", 3), "int8-l2": ("int8-dynamic", 2)}


def cpu_seconds() -> float:
    """User + system CPU time of this process so far (all its threads)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def uptime() -> str:
    """``uptime``'s line (load averages over 1, 5 and 15 minutes) at this moment."""
    import subprocess

    out = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout
    return " ".join(out.split()) or f"load average {os.getloadavg()}"


def make_dataset(args: argparse.Namespace, work: Path) -> tuple[Path, dict[str, float]]:
    """Collect (resumable) and build the dataset once; times of both."""
    t0 = time.perf_counter()
    files = collect(CollectOptions(max_tasks=args.tasks, rollouts=args.rollouts,
                                   max_steps=args.steps), work / "trajectories", progress=False)
    t_collect = time.perf_counter() - t0
    # Render budget = max_length - 4: the oldest rounds go first, the goal and NOW stay.
    render = RenderOptions(env="textcraft", history_k=args.history_k,
                           max_tokens=args.max_length - 4, preamble="Predict the future reward.")
    opts = DatasetOptions(render=render, val_fraction=0.1, test_fraction=0.15, seed=0)
    ds = work / f"dataset-k{args.history_k}-L{args.max_length}-t{args.tasks}-g{args.rollouts}"
    t0 = time.perf_counter()
    if not (ds / "card.json").is_file():
        build_dataset(read_trajectories(files), ds, opts)
    return ds, {"collect_s": t_collect, "dataset_s": time.perf_counter() - t0}


def head_cfg(args: argparse.Namespace, variant: str, cache: Path, uri: str, train_rows: int,
             eval_rows: int | None = None) -> TrainConfig:
    """Head mode with one encoder variant (tracked, not registered)."""
    quantize, layers = VARIANTS[variant]
    model = ModelConfig(max_length=args.max_length, head_hidden=args.head_hidden,
                        quantize=quantize, num_layers=layers)  # type: ignore[arg-type]
    return TrainConfig(model=model, mode="head", head=HeadConfig(cache_dir=cache), seed=0,
                       device="cpu", env="textcraft", experiment="amc-value-scale",
                       tracking_uri=uri, register_model=False, max_train_rows=train_rows,
                       max_eval_rows=eval_rows)


def timed_train(ds: Path, cfg: TrainConfig, out: Path, label: str, variant: str,
                train_texts: list[str]) -> Timed:
    """Wall and CPU time and final metrics of one ``train()`` call."""
    rows = train_texts[: cfg.max_train_rows]
    load = f"{os.getloadavg()[0]:.1f}"
    t0, c0 = time.perf_counter(), cpu_seconds()
    res = train(ds, cfg, out)
    timed = Timed(label, variant, len(rows), len(set(rows)), time.perf_counter() - t0,
                  cpu_seconds() - c0, load, res.best)
    print(f"{label}: wall {timed.wall:.0f} s, CPU {timed.cpu:.0f} s, load {load}, "
          f"val Pearson {res.best.get('best_val_pearson', float('nan')):.3f} | {uptime()}",
          flush=True)
    return timed


def full_rate(ds: Path, args: argparse.Namespace, work: Path) -> float:
    """Full fine-tuning samples/s on ``--full-rows`` training states (1 epoch, no tracking)."""
    cfg = TrainConfig(model=ModelConfig(max_length=args.max_length, head_hidden=args.head_hidden),
                      epochs=1, batch_size=16, max_train_rows=args.full_rows, track=False,
                      device="cpu", max_eval_rows=args.compare_eval_rows)  # eval: not the rate
    return train(ds, cfg, work / "full").samples_per_s


def compare(ds: Path, args: argparse.Namespace, work: Path, uri: str,
            train_texts: list[str]) -> list[Timed]:
    """Every ``--compare`` variant, cold, on the same training and held-out states."""
    cache = work / "compare-cache"
    shutil.rmtree(cache, ignore_errors=True)  # every variant has its own key: each starts cold
    return [timed_train(ds, head_cfg(args, v, cache, uri, args.compare_rows,
                                     args.compare_eval_rows),
                        work / f"compare-{v}", f"{v} (compare)", v, train_texts)
            for v in args.compare]


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, default=Path("runs/bench-value-scale"))
    ap.add_argument("--tasks", type=int, default=260)
    ap.add_argument("--rollouts", type=int, default=16)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--history-k", type=int, default=6)
    ap.add_argument("--max-length", type=int, default=128)
    ap.add_argument("--head-hidden", type=int, default=256)
    ap.add_argument("--variant", choices=sorted(VARIANTS), default="int8-l3",
                    help="encoder of the timed run at scale")
    ap.add_argument("--train-states", type=int, default=20_000)
    ap.add_argument("--compare", nargs="*", choices=sorted(VARIANTS),
                    default=["float", "int8", "float-l3", "int8-l3", "int8-l2"])
    ap.add_argument("--compare-rows", type=int, default=1000)
    ap.add_argument("--compare-eval-rows", type=int, default=500)
    ap.add_argument("--full-rows", type=int, default=16, help="0: skip full fine-tuning")
    ap.add_argument("--full-epochs", type=int, default=3, help="epochs of the extrapolation")
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000, 5000, 10000, 20000])
    ap.add_argument("--no-write", action="store_true", help="print only")
    return ap.parse_args()


def main() -> None:
    args = parse_args()
    up_start = uptime()
    print(f"start: {up_start}", flush=True)
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    uri = f"sqlite:///{work / 'mlflow.db'}"
    ds, prep = make_dataset(args, work)
    print(f"dataset ready: {prep} | {uptime()}", flush=True)
    card = json.loads((ds / "card.json").read_text())
    train_texts = list(load_dataset_dir(ds)[0]["train"]["text"])
    cache = work / "feature-cache"
    shutil.rmtree(cache, ignore_errors=True)  # cold: nothing embedded yet
    cfg = head_cfg(args, args.variant, cache, uri, args.train_states)
    cold = timed_train(ds, cfg, work / "head-cold", "cold cache", args.variant, train_texts)
    warm = timed_train(ds, cfg, work / "head-warm", "warm cache", args.variant, train_texts)
    info: dict[str, Any] = {"args": vars(args), "card": card, "prep": prep,
                            "threads": torch.get_num_threads(), "full_sps": float("nan")}
    publish(args, report(info, [], cold, warm, None), up_start)  # a later stop keeps this much
    side = compare(ds, args, work, uri, train_texts)
    info["full_sps"] = full_rate(ds, args, work) if args.full_rows else float("nan")
    quality = quality_vs_size(ds, args.sizes, cfg, ASSETS, progress=False)
    publish(args, report(info, side, cold, warm, quality), up_start)


def publish(args: argparse.Namespace, body: str, up_start: str) -> None:
    """Print the section and (unless --no-write) write it into docs/benchmarks.md."""
    body += f"\nMachine load (`uptime`) at the start: `{up_start}`; at the end: `{uptime()}`.\n"
    print(body, flush=True)
    if not args.no_write:
        write_section("value-scale", "Value training at scale on CPU (head mode)", body)


if __name__ == "__main__":
    main()
