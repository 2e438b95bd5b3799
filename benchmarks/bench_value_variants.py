"""The sweep value's representation options on one held-out set: head-only vs an ensemble of
heads vs LoRA on the encoder (issue 30, item 1).

One reduced dataset of the sweep's TextCraft value data, built by the stage's own code
(:func:`studies.sweeps.value.rollouts`, :func:`amc.value.data.build_dataset`,
:func:`studies.sweeps.value.dataset_options`, sweeps/params.yaml's ``value`` section) with only the
first ``--max-tasks`` value-training tasks and *realised-return targets*: the section's
``state_rollouts`` (K extra prior rollouts per visited state) are skipped for time, so every
variant trains on the plain returns (the held-out states keep realised targets in the stage
too). Four variants, each calibrated by the section's isotonic map fitted on the validation
split and scored on the same held-out (value-test) states by
:func:`studies.sweeps.offline.held_out_figures`:

- (a) head-only, one head, seed 0 (the stage's recipe: frozen float MiniLM, bce, cached features);
- (b) an ensemble of K heads (seeds 0..K-1) on the same features, p averaged
  (:mod:`studies.sweeps.ensemble`), then calibrated;
- (c) LoRA (r = 8 on query/key/value/dense) on the float MiniLM encoder, full mode of
  :func:`amc.value.train.train`, bce, 1 epoch on a seeded random subset of the training states
  sized from a measured 64-state probe to fit ``--lora-budget`` seconds (at most ``--lora-cap``);
- (d) head-only on exactly that subset: (c) vs (d) compares the representations at equal data.

Differences (b) - (a) and (c) - (d) of AUC within (task, step) and log-loss get a 95% interval
from a bootstrap over held-out tasks (tasks resampled with replacement, seeded). Writes
``docs/benchmarks.md``'s ``value-variants`` section and ``docs/value-variants/result.json``.

    nice -n 10 python -m benchmarks.bench_value_variants
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._report import md_table, write_section

REPO = Path(__file__).resolve().parent.parent
LORA_TARGETS = ("query", "key", "value", "dense")  # MiniLM's (BERT) projections
LORA_LR = 5e-4
FIGS = ("auc_within", "log_loss", "small_p_ratio", "doomed_mean", "doomed_weight")
PAIRS = (("b", "a"), ("c", "d"))
NAMES = {"a": "(a) head, 1 seed", "b": "(b) ensemble of heads", "c": "(c) LoRA r=8",
         "d": "(d) head, (c)'s subset"}


def build(vp: Any, cell: Any, work: Path) -> tuple[list[Any], Path]:
    """The stage's rollouts and dataset (reduced ``vp``): (tagged histories, dataset dir)."""
    from amc.value.data import build_dataset
    from studies.sweeps.value import dataset_options, rollouts

    tagged = asyncio.run(rollouts(vp, cell))
    build_dataset([h for _, h in tagged], work / "dataset", dataset_options(vp))
    return tagged, work / "dataset"


def head_config(vp: Any, cache: Path) -> Any:
    from studies.sweeps.value import train_config

    return train_config(vp, cache, track=False)


def embed(cfg: Any, dsd: Any) -> tuple[dict[str, Any], float]:
    """Frozen-encoder features of every split (one cache), and the wall seconds."""
    from amc.value.model import load_tokenizer_for
    from amc.value.train_head import embed_splits, frozen_model
    from amc.value.train_run import columns

    t0 = time.perf_counter()
    splits = {s: columns(dsd[s]) for s in ("train", "validation", "test")}
    feats, _ = embed_splits(frozen_model(cfg), load_tokenizer_for(cfg.model), splits, cfg,
                            progress=False)
    return feats, time.perf_counter() - t0


def calibrated(vp: Any, p_val: np.ndarray, y_val: np.ndarray, p_test: np.ndarray) -> np.ndarray:
    """The section's calibration fitted on validation (as :func:`fit_calibration`), applied."""
    from amc.value.calibration import fit

    return np.clip(fit(vp.calibration, p_val, y_val >= 0.5)(p_test), 0.0, 1.0)


def head_variants(vp: Any, cfg: Any, feats: dict[str, Any], sub: np.ndarray,
                  k: int) -> dict[str, dict[str, Any]]:
    """(a), (b) and (d): raw p on validation and test, training seconds and states."""
    from amc.value.train_head import SplitFeatures
    from studies.sweeps.ensemble import head_member, member_seeds, train_members

    tr, va, te = feats["train"], feats["validation"], feats["test"]
    ens = train_members(head_member(tr, va, cfg), member_seeds(vp.seed, k))
    val_m, test_m = ens.member_predictions(va.x), ens.member_predictions(te.x)
    tr_sub = SplitFeatures(tr.x[sub], {c: [v[i] for i in sub] for c, v in tr.cols.items()})
    one = train_members(head_member(tr_sub, va, cfg), [vp.seed])
    n = len(tr.x)
    return {"a": {"val": val_m[0], "test": test_m[0], "seconds": ens.seconds[0], "states": n},
            "b": {"val": ens.predict(va.x), "test": ens.predict(te.x),
                  "seconds": sum(ens.seconds), "states": n, "members": k},
            "d": {"val": one.predict(va.x), "test": one.predict(te.x),
                  "seconds": one.seconds[0], "states": len(sub)}}


def lora_config(vp: Any, rows: int) -> Any:
    from amc.value.model import ModelConfig
    from amc.value.train import TrainConfig

    model = ModelConfig(max_length=vp.max_length, loss=vp.loss, lora=True, lora_r=8,
                        lora_targets=LORA_TARGETS)
    return TrainConfig(model=model, mode="full", epochs=1, batch_size=16, lr=LORA_LR,
                       seed=vp.seed, device="cpu", env="textcraft", track=False,
                       register_model=False, max_train_rows=rows, max_eval_rows=2)


def subset_dir(ds: Path, dsd: Any, order: np.ndarray, out: Path) -> Path:
    """The dataset with its train split replaced by the rows ``order`` (in that order)."""
    import shutil

    out.mkdir(parents=True)
    for f in ("render.json", "card.json"):
        shutil.copy(ds / f, out / f)
    sub = dict(dsd)
    sub["train"] = dsd["train"].select([int(i) for i in order])
    type(dsd)(sub).save_to_disk(str(out / "data"))
    return out


def lora_run(vp: Any, sub_ds: Path, rows: int, out: Path) -> tuple[Path, float]:
    """Train (c) on the first ``rows`` of the subset's train split; (model dir, seconds)."""
    from amc.value.train import train

    t0 = time.perf_counter()
    res = train(sub_ds, lora_config(vp, rows), out)
    return res.model_dir, time.perf_counter() - t0


def lora_variant(vp: Any, sub_ds: Path, dsd: Any, work: Path, budget: float,
                 cap: int) -> tuple[dict[str, Any], dict[str, float]]:
    """Probe 64 states, size the subset to ``budget`` seconds, train (c), score val and test."""
    from amc.value.model import load_model, predict_texts

    _, probe_s = lora_run(vp, sub_ds, 64, work / "lora-probe")
    rate = 64 / probe_s  # includes building the model: an under-estimate of the rate
    n = int(min(cap, len(dsd["train"]), max(64, math.floor(rate * budget))))
    model_dir, seconds = lora_run(vp, sub_ds, n, work / "lora")
    t0 = time.perf_counter()
    model, tok, _ = load_model(model_dir, "cpu")
    val = np.array(predict_texts(model, tok, list(dsd["validation"]["text"])))
    test = np.array(predict_texts(model, tok, list(dsd["test"]["text"])))
    score_s = time.perf_counter() - t0
    return ({"val": val, "test": test, "seconds": seconds, "states": n},
            {"probe_states_per_s": rate, "probe_s": probe_s, "score_s": score_s})


def figures(vp: Any, cell: Any, tagged: list[Any], held: Any,
            p: dict[str, np.ndarray]) -> dict[str, Any]:
    from studies.sweeps.bench import make_bench_suite
    from studies.sweeps.offline import held_out_figures

    keys = list(zip(held["task_id"], held["traj"], held["step"], strict=True))
    preds = {v: dict(zip(keys, map(float, pv), strict=True)) for v, pv in p.items()}
    return held_out_figures(make_bench_suite(cell), [h for _, h in tagged], held, preds,
                            vp.menu_form)


def bootstrap(held: Any, p: dict[str, np.ndarray], n: int, seed: int) -> dict[str, Any]:
    """95% intervals of the differences of ``PAIRS`` in AUC within and log-loss, resampling
    held-out tasks with replacement (each copy of a task its own (task, step) groups)."""
    from amc.value.calibration import log_loss
    from amc.value.metrics import within_group_auc

    live = ~np.asarray(held["terminal"], bool)  # the states held_out_figures measures
    task = np.asarray(held["task_id"])[live]
    step = np.asarray(held["step"])[live]
    y = np.asarray(held["target"], float)[live] >= 0.5
    pl = {v: pv[live] for v, pv in p.items()}
    tasks = sorted(set(task))
    rows = {t: np.flatnonzero(task == t) for t in tasks}
    rng = np.random.default_rng(seed)
    diffs: dict[str, list[float]] = {f"{x}-{z}:{f}": [] for x, z in PAIRS
                                     for f in ("auc_within", "log_loss")}
    for _ in range(n):
        pick = rng.choice(len(tasks), size=len(tasks), replace=True)
        idx = np.concatenate([rows[tasks[i]] for i in pick])
        groups = [(c, task[j], step[j]) for c, i in enumerate(pick) for j in rows[tasks[i]]]
        for x, z in PAIRS:
            diffs[f"{x}-{z}:auc_within"].append(
                within_group_auc(pl[x][idx], y[idx], groups)
                - within_group_auc(pl[z][idx], y[idx], groups))
            diffs[f"{x}-{z}:log_loss"].append(log_loss(pl[x][idx], y[idx])
                                               - log_loss(pl[z][idx], y[idx]))
    return {k: [float(q) for q in np.nanpercentile(v, [2.5, 97.5])] for k, v in diffs.items()}


def better(fig: str, x: float, z: float) -> int:
    """+1 when ``x`` is better than ``z`` on figure ``fig``, -1 worse, 0 tied (to the printed
    3 decimals) or unknown. small_p_ratio: closer to 1 (|log ratio| smaller) is better."""
    if not (math.isfinite(x) and math.isfinite(z)) or round(x, 3) == round(z, 3):
        return 0
    if fig == "small_p_ratio":
        if x <= 0 or z <= 0:
            return 0
        return 1 if abs(math.log(x)) < abs(math.log(z)) else -1
    higher = fig == "auc_within"
    return 1 if (x > z) == higher else -1


def fmt(x: float) -> str:
    return f"{x:.3f}" if math.isfinite(x) else "n/a"


def verdict(x: str, z: str, b: int) -> str:
    return {1: f"**{x}**", -1: f"**{z}**", 0: "tie"}[b]


def comparison_rows(fig: dict[str, Any], m: dict[str, Any]) -> list[list[object]]:
    rows: list[list[object]] = []
    for f in FIGS:
        row: list[object] = [f]
        for x, z in PAIRS:
            px, pz = fig[x].get(f, float("nan")), fig[z].get(f, float("nan"))
            row += [fmt(pz), fmt(px), verdict(f"({x})", f"({z})", better(f, px, pz))]
        rows.append(row)
    for label, key, form in (("training states", "states", "{:.0f}"),
                             ("training wall s", "seconds", "{:.1f}")):
        row = [label]
        for x, z in PAIRS:
            row += [form.format(m[z][key]), form.format(m[x][key]), ""]
        rows.append(row)
    return rows


def interval_lines(fig: dict[str, Any], ci: dict[str, Any], n_boot: int) -> list[str]:
    out = []
    for x, z in PAIRS:
        for f in ("auc_within", "log_loss"):
            lo, hi = ci[f"{x}-{z}:{f}"]
            d = fig[x][f] - fig[z][f]
            sep = "excludes 0: a real difference" if lo > 0 or hi < 0 else \
                "contains 0: not separable from noise"
            out.append(f"- ({x}) - ({z}), {f}: {d:+.4f} [{lo:+.4f}, {hi:+.4f}] -- {sep}")
    return [*out, f"({n_boot} resamples of the held-out tasks.)"]


def report(r: dict[str, Any]) -> str:
    fig, m, sp = r["figures"], r["variants"], r["splits"]
    head = ["figure"] + [c for x, z in PAIRS for c in (NAMES[z], NAMES[x], "better")]
    lo = r["lora"]
    return "\n".join([
        "`python -m benchmarks.bench_value_variants` -- issue 30 item 1: the sweep value's "
        "representation on one reduced TextCraft value dataset (the stage's rollouts and "
        f"rendering, sweeps/params.yaml's value section, first {r['max_tasks']} value-training "
        f"tasks). **Targets: realised returns** (the section's state_rollouts = "
        f"{r['state_rollouts']} extra rollouts per state skipped for time). All variants bce, "
        f"isotonic calibration fitted on validation, scored on the same {r['held_states']:.0f} "
        "held-out live states "
        f"({sp['test']['tasks']} test tasks; {sp['train']['rows']} train / "
        f"{sp['validation']['rows']} validation / {sp['test']['rows']} test rows). "
        f"(b): {r['k']} heads, seeds 0..{r['k'] - 1}, mean p. (c): LoRA r=8 on "
        f"{'/'.join(LORA_TARGETS)}, lr {LORA_LR:g}, 1 epoch, head from scratch; the probe "
        f"measured {lo['probe_states_per_s']:.1f} states/s (64 states, model build included) "
        f"and the subset was sized to {r['lora_budget']:.0f} s (cap {r['lora_cap']}). "
        f"Frozen-encoder embedding of all splits (shared by a, b, d): {r['embed_s']:.0f} s; "
        f"(c) scoring validation + test through the encoder: {lo['score_s']:.0f} s.", "",
        md_table(head, comparison_rows(fig, m)), "",
        "Bootstrap over held-out tasks, 95% interval of the difference (AUC: higher better; "
        "log-loss: lower better):", "", *interval_lines(fig, r["bootstrap"], r["n_boot"]), "",
        f"Whole script: {r['wall_s'] / 60:.1f} min wall (2 shared, busy cores, nice 10). "
        "Every figure in `docs/value-variants/result.json`."])


def measure(args: argparse.Namespace) -> dict[str, Any]:
    from amc.value.data import load_dataset_dir
    from studies.sweeps.config import load_sweep_params

    t_all = time.perf_counter()
    params = load_sweep_params(REPO / "sweeps" / "params.yaml")
    cell = params.cell
    vp = params.value.model_copy(update={"max_tasks": args.max_tasks, "state_rollouts": 0})
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        tagged, ds = build(vp, cell, work)
        dsd, _, card = load_dataset_dir(ds)
        cfg = head_config(vp, work / "feature-cache")
        feats, embed_s = embed(cfg, dsd)
        order = np.random.default_rng(args.seed).permutation(len(dsd["train"]))
        order = order[: min(args.lora_cap, len(order))]
        sub_ds = subset_dir(ds, dsd, order, work / "subset")
        c, lora = lora_variant(vp, sub_ds, dsd, work, args.lora_budget, args.lora_cap)
        m = {**head_variants(vp, cfg, feats, order[: c["states"]], args.k), "c": c}
        y_val = np.asarray(dsd["validation"]["target"], float)
        p = {v: calibrated(vp, r["val"], y_val, r["test"]) for v, r in m.items()}
        held = dsd["test"]
        if any(len(pv) != len(held) for pv in p.values()):
            raise RuntimeError("a variant was not scored on every held-out state")
        fig = figures(vp, cell, tagged, held, p)
        ci = bootstrap(held, p, args.n_boot, args.seed)
    states = {fig[v]["states"] for v in m}
    if len(states) != 1:
        raise RuntimeError(f"variants measured on different held-out sets: {states}")
    return {"max_tasks": args.max_tasks, "state_rollouts": params.value.state_rollouts,
            "k": args.k, "lora_budget": args.lora_budget, "lora_cap": args.lora_cap,
            "n_boot": args.n_boot, "seed": args.seed, "held_states": states.pop(),
            "splits": {s: {k: v for k, v in d.items() if k != "target_histogram"}
                       for s, d in card["splits"].items()},
            "embed_s": embed_s, "lora": lora, "figures": fig, "bootstrap": ci,
            "variants": {v: {k: x for k, x in r.items() if k not in ("val", "test")}
                         for v, r in m.items()},
            "wall_s": time.perf_counter() - t_all}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-tasks", type=int, default=40)
    ap.add_argument("--k", type=int, default=5, help="ensemble members")
    ap.add_argument("--lora-budget", type=float, default=300.0, help="LoRA training seconds")
    ap.add_argument("--lora-cap", type=int, default=2000, help="most LoRA training states")
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-write", action="store_true", help="print only")
    args = ap.parse_args(argv)
    r = measure(args)
    body = report(r)
    print(body)
    if not args.no_write:
        out = REPO / "docs" / "value-variants" / "result.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(r, indent=1, sort_keys=True, default=float) + "\n")
        write_section("value-variants", "The sweep value's representation: head vs ensemble "
                      "vs LoRA (issue 30 item 1)", body)


if __name__ == "__main__":
    main()
