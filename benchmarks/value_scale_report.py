"""The markdown of the value-scale benchmark (:mod:`benchmarks.bench_value_scale`).

Every number in the section comes from the run's measurements; the short reading at the end is
generated from them too (ratios against the float encoder, the goal's verdict and its margin).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from benchmarks._report import md_table

GOAL_S = 300.0  # the goal: >= 20,000 training states in <= 5 minutes on 2 cores
CORES = 2


@dataclass
class Timed:
    """One timed ``train()`` call."""

    label: str
    variant: str
    train_rows: int
    train_distinct: int
    wall: float
    cpu: float  # user + system seconds of this process (all threads) during the call
    load: str  # 1-minute load average at the start
    metrics: dict[str, float]


def _f(m: dict[str, float], key: str, fmt: str = ".3f") -> str:
    v = m.get(key, float("nan"))
    return "-" if v != v else format(v, fmt)


def embed_cpu_per_state(t: Timed) -> float:
    """CPU seconds of embedding per newly embedded state (nan when nothing was embedded)."""
    n = t.metrics.get("embed_new_states", 0.0)
    return t.metrics.get("embed_cpu_seconds", float("nan")) / n if n else float("nan")


def runs_table(runs: list[Timed]) -> str:
    """One row per timed ``train()`` call."""
    rows = []
    for t in runs:
        m = t.metrics
        rows.append([
            t.label, t.variant, f"{t.train_rows} ({t.train_distinct})",
            f"{m.get('embed_new_states', 0):.0f}", f"{t.wall:.0f}", f"{t.cpu:.0f}",
            f"{t.cpu / CORES:.0f}", _f({"v": 1000 * embed_cpu_per_state(t)}, "v", ".0f"),
            f"{m.get('head_seconds', 0):.1f}", _f(m, "best_val_pearson"), _f(m, "best_val_auc"),
            _f(m, "test_pearson"), _f(m, "test_auc"), _f(m, "test_ece"), t.load])
    return md_table(["run", "encoder", "train states (distinct)", "embedded", "wall s", "CPU s",
                     "CPU s / 2 threads (lower bound, dedicated 2 cores)",
                     "embed CPU ms/state", "head s", "val Pearson", "val AUC", "test Pearson",
                     "test AUC", "test ECE", "load avg"], rows)


def comparison_reading(side: list[Timed]) -> str:
    """Each variant against the float encoder: CPU per embedded state and quality deltas."""
    base = next((t for t in side if t.variant == "float"), None)
    if base is None or len(side) < 2:
        return ""
    b_cpu = embed_cpu_per_state(base)
    parts = []
    for t in side:
        if t is base:
            continue
        d = {k: t.metrics.get(k, float("nan")) - base.metrics.get(k, float("nan"))
             for k in ("best_val_pearson", "best_val_auc", "test_pearson", "test_auc")}
        parts.append(
            f"`{t.variant}` needs {embed_cpu_per_state(t) / b_cpu:.2f}x the float encoder's "
            f"CPU time per embedded state, with val Pearson {d['best_val_pearson']:+.3f}, val "
            f"AUC {d['best_val_auc']:+.3f}, test Pearson {d['test_pearson']:+.3f}, test AUC "
            f"{d['test_auc']:+.3f}")
    return ("Side by side on the same states (cold caches): " + "; ".join(parts)
            + ". The comparison's held-out sets are the first rows of each split (few tasks), "
            "so its absolute values are noisy; the differences are paired.\n\n")


def goal_reading(cold: Timed) -> str:
    """The verdict on the cold run: wall time, and the CPU-time lower bound on 2 cores."""
    m = cold.metrics
    bound = cold.cpu / CORES
    share = m.get("embed_cpu_seconds", 0.0) / cold.cpu if cold.cpu else float("nan")
    if cold.train_rows < 20_000:
        verdict = f"**not measured at 20,000** ({cold.train_rows} training states)"
    elif cold.wall <= GOAL_S:
        verdict = f"**met** ({cold.wall:.0f} s wall)"
    elif bound <= GOAL_S:
        verdict = (f"**not met in wall time** ({cold.wall:.0f} s on the shared cores, load "
                   f"{cold.load}); the CPU time, {cold.cpu:.0f} s, is {bound:.0f} s on 2 "
                   "dedicated cores at best, within the goal: open until measured on quiet "
                   "cores")
    else:
        verdict = (f"**not met**: {cold.wall:.0f} s wall, and even the CPU-time lower bound "
                   f"({cold.cpu:.0f} CPU s / 2 = {bound:.0f} s) misses 300 s by "
                   f"{bound - GOAL_S:.0f} s ({bound / GOAL_S:.1f}x)")
    return (f"Goal >= 20,000 training states in <= 5 minutes on 2 cores (cold cache, whole "
            f"`train()`, encoder `{cold.variant}`): {verdict}. Embedding is "
            f"{100 * share:.0f}% of that CPU time ({m.get('embed_new_states', 0):.0f} distinct "
            f"states of all three splits at {1000 * embed_cpu_per_state(cold):.0f} CPU ms "
            "each). CPU time counts the work of this process only; torch threads spinning "
            "while the other cores' jobs run are included, so on a busy machine it can "
            "overstate the work a little.\n\n")


def data_line(info: dict[str, Any]) -> str:
    a, splits, prep = info["args"], info["card"]["splits"], info["prep"]
    return (
        f"Data: TextCraft (dense reward), `random-valid` prior, bon@{a['rollouts']} on the first "
        f"{a['tasks']} train-split tasks, {a['steps']} steps (collection {prep['collect_s']:.0f} s"
        f" incl. resume, dataset {prep['dataset_s']:.0f} s incl. reuse); split by task into "
        f"{splits['train']['rows']} / {splits['validation']['rows']} / {splits['test']['rows']} "
        f"states (train/val/test), success rate {splits['train']['success_rate']:.2f}. Model: "
        f"MiniLM-L6 (frozen), mean pooling, max_length {a['max_length']}, history_k "
        f"{a['history_k']}, head 384-{a['head_hidden']}-1; torch threads {info['threads']}. "
        "Encoders: `float` (the pipeline's), `int8` (`model.quantize=int8-dynamic`), `-l3` = "
        "the first 3 (or 2) of 6 layers (`model.num_layers`). Every `train()` embeds the distinct "
        "states of all its splits once (train, validation, test) through one cache.\n\n")


def report(info: dict[str, Any], side: list[Timed], cold: Timed, warm: Timed,
           quality: dict[str, Any] | None) -> str:
    """The whole markdown section."""
    a = info["args"]
    if quality is None:  # the run stopped after the timed runs: say so, report what exists
        return (data_line(info) + runs_table([cold, warm]) + "\n\n" + goal_reading(cold)
                + "**Partial section**: the run stopped after the timed runs; the encoder "
                "comparison, full fine-tuning and quality-vs-size parts did not finish.\n")
    q = md_table(["training states", "tasks", "Pearson", "AUC", "ECE", "Brier", "epochs"],
                 [[r["train_states"], r["train_tasks"], f"{r['pearson']:.3f}", f"{r['auc']:.3f}",
                   f"{r['ece']:.3f}", f"{r['brier']:.3f}", r["epochs"]] for r in quality["rows"]])
    sps = info["full_sps"]
    full = ("" if sps != sps else
            f"Full fine-tuning (float, all layers, 1 epoch on {a['full_rows']} states): "
            f"{sps:.1f} states/s, i.e. ~{cold.train_rows * a['full_epochs'] / sps:.0f} s for "
            f"{a['full_epochs']} epochs on {cold.train_rows} states (**extrapolated**).\n\n")
    return (
        data_line(info)
        + f"The timed run at scale (cold and warm cache), then the encoder variants side by side "
        f"({a['compare_rows']} training rows, {a['compare_eval_rows']} validation and test rows "
        f"each):\n\n" + runs_table([cold, warm, *side]) + "\n\n"
        + comparison_reading(side) + goal_reading(cold) + full
        + f"Value quality vs training-set size (encoder `{cold.variant}`, nested subsets of the "
        f"first {cold.train_rows} training states, held-out {quality['held_out']} split: "
        f"{quality['held_out_states']} states of {quality['held_out_tasks']} tasks; "
        "`docs/value-scale/quality_vs_size.{json,png}`, MLflow experiment `amc-value-scale`):"
        "\n\n" + q + "\n")
