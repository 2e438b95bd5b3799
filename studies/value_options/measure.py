"""Offline figures of the value options on the embedded-LLM rounds' states (issue 50, item 1).

For each rendering (``old``, ``goal-kept``) and each objective (plain regression, pairwise,
listwise, centred), a linear head is trained on the frozen MiniLM-L6 features of the rounds'
train tasks (:func:`amc.value.train_head.fit_head`, head-mode defaults, seed 0), a resampling
temperature is fitted on the validation tasks (:func:`amc.value.temperature.fit_temperature`),
and the head is scored on the fixed held-out set (the declared 60-task set's Best-of-4 prior
states, tasks no round trains on): within-(task, step) AUC at the resampling steps 2 and 4
with a 95% task-cluster bootstrap interval and the paired difference to regression, the
within-group spread against beta = 0.1 and its weight ratio, the within-group log-loss at beta
and at the fitted T (:mod:`studies.value_options.sibling_metrics`).

``python -m studies.value_options.measure [--cost]`` writes ``results.json`` and
``results.md`` beside this file; ``--cost`` adds the fine-tuning cost (:mod:`.cost`),
``--cost-only`` measures only that into the existing ``results.json``; ``--render`` only
re-renders ``results.md`` from it. ``--regime chosen`` scores the same options at step 1 of
issue 49's chosen regime instead (:mod:`.chosen`) into ``results-chosen.json`` and
``results-chosen.md`` (``--render`` re-renders that one).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import rankdata

from studies.value_options import states

HERE = Path(__file__).resolve().parent
BETA = 0.1
STEPS = (2, 4)
BOOT = 2000
SEEDS = (0, 1, 2)
"""Training seeds: seed 0 gives the table's figures and intervals; all give the seed range."""
OPTIONS: dict[str, dict[str, Any]] = {
    "regression": {},
    "pairwise": {"kind": "pairwise", "select_on": "auc_within"},
    "listwise": {"kind": "listwise", "select_on": "auc_within"},
    "centred": {"kind": "centred", "regression_weight": 0.0, "select_on": "auc_within"},
}
"""The objectives compared (:class:`amc.value.ranking.ObjectiveConfig` fields)."""


def task_counts(score: np.ndarray, y: np.ndarray, groups: list[tuple[str, int]], step: int
                ) -> dict[str, tuple[float, float]]:
    """Per task: (concordant pairs, ties one half; mixed pairs) of its group at ``step``."""
    out: dict[str, tuple[float, float]] = {}
    idx: dict[str, list[int]] = {}
    for i, (task, t) in enumerate(groups):
        if t == step:
            idx.setdefault(task, []).append(i)
    for task, m in idx.items():
        yy = y[m]
        n_pos, n_neg = int(yy.sum()), len(m) - int(yy.sum())
        if n_pos and n_neg:
            r = rankdata(score[m])
            out[task] = (float(r[yy].sum() - n_pos * (n_pos + 1) / 2), float(n_pos * n_neg))
    return out


def bootstrap(counts: dict[str, dict[str, tuple[float, float]]], base: str, seed: int = 0
              ) -> dict[str, dict[str, float]]:
    """Within AUC per option with a task-cluster bootstrap 95% interval, and its paired
    difference to ``base`` (same resampled tasks)."""
    tasks = sorted(counts[base])
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(tasks), (BOOT, len(tasks)))
    arr = {k: np.array([c[t] for t in tasks]) for k, c in counts.items()}
    auc = {k: a[draws, 0].sum(1) / a[draws, 1].sum(1) for k, a in arr.items()}
    out = {}
    for k, a in arr.items():
        d = auc[k] - auc[base]
        out[k] = {"auc": float(a[:, 0].sum() / a[:, 1].sum()),
                  "lo": float(np.quantile(auc[k], 0.025)), "hi": float(np.quantile(auc[k], 0.975)),
                  "diff": float(a[:, 0].sum() / a[:, 1].sum()
                                - arr[base][:, 0].sum() / arr[base][:, 1].sum()),
                  "diff_lo": float(np.quantile(d, 0.025)), "diff_hi": float(np.quantile(d, 0.975)),
                  "tasks": float(len(tasks)), "pairs": float(a[:, 1].sum())}
    return out


def fit_option(name: str, sp: dict[str, states.Split],
               seed: int) -> tuple[Any, Any, dict[str, Any]]:
    """One objective's frozen-encoder head trained on ``train`` (early stopping on
    ``validation``) and the resampling temperature fitted on ``validation``: (model, fit,
    {epochs, best_epoch, head_seconds})."""
    from amc.value.temperature import fit_temperature
    from amc.value.train_head import SplitFeatures, fit_head, frozen_model, head_predict
    from amc.value.train_run import TrainConfig

    cfg = TrainConfig(mode="head", track=False, seed=seed,
                      model={"max_length": states.MAX_LENGTH, "num_layers": 6},
                      head={"objective": OPTIONS[name]})
    model = frozen_model(cfg)
    tr, va = (SplitFeatures(sp[k].features(), sp[k].cols()) for k in ("train", "validation"))
    t0 = time.perf_counter()
    history, best = fit_head(model, tr, va, cfg, progress=False)
    seconds = time.perf_counter() - t0
    v_val = head_predict(model, va.x) + sp["validation"].reward_so_far
    fit = fit_temperature(v_val, sp["validation"].success, sp["validation"].groups)
    return model, fit, {"epochs": len(history), "best_epoch": best, "head_seconds": seconds}


def train_option(name: str, sp: dict[str, states.Split], seed: int = 0) -> dict[str, Any]:
    """Train one objective's head; its fitted T and held-out figures."""
    from amc.value.metrics import value_metrics
    from amc.value.train_head import head_predict
    from studies.value_options.sibling_metrics import sibling_metrics, within_spread

    model, fit, trained = fit_option(name, sp, seed)
    h = sp["held_out"]
    pred = head_predict(model, h.features())
    sib = sibling_metrics(pred, h.reward_so_far, h.success, h.groups, STEPS, BETA,
                          fit.temperature)
    pooled = value_metrics(pred, h.target, h.reward_so_far, h.success)
    v = pred + h.reward_so_far
    run_sel = [i for i, r in enumerate(h.runs) if r[2] == STEPS[0]]
    spread_run = within_spread(v[run_sel], [h.runs[i] for i in run_sel])
    return {**trained,
            "temperature": fit.temperature, "temperature_at_bound": fit.at_bound,
            "val_log_loss_fitted": fit.log_loss, "val_log_loss_uniform": fit.uniform_log_loss,
            "val_mixed_groups": fit.groups, "held_out": sib,
            "held_out_auc": pooled["auc"], "held_out_pearson": pooled["pearson"],
            f"spread_run_step{STEPS[0]}": spread_run,
            "weight_ratio_fitted": {f"step{t}": math.exp(sib[f"spread_step{t}"] / fit.temperature)
                                    for t in STEPS},
            "_score": np.clip(v, 0, 1)}


def measure_variant(variant: str, tok: Any, cache: Path) -> dict[str, Any]:
    """All options on one rendering; the embedding statistics; the AUC bootstrap."""
    sp = states.build(variant, tok)
    emb = states.embed(sp, cache)
    res = {name: train_option(name, sp) for name in OPTIONS}
    for name, r in res.items():
        r["seeds"] = {}
        for seed in SEEDS:
            o = r if seed == 0 else train_option(name, sp, seed)
            r["seeds"][str(seed)] = {f"step{t}": o["held_out"][f"auc_within_step{t}"]
                                     for t in STEPS}
    h = sp["held_out"]
    boot = {}
    for t in STEPS:
        counts = {k: task_counts(r["_score"], h.success, h.groups, t) for k, r in res.items()}
        boot[f"step{t}"] = bootstrap(counts, "regression", seed=t)
    for r in res.values():
        del r["_score"]
    goal_lost = [_goal_lost(sp["held_out"], tok, t) for t in STEPS]
    return {"embedding": emb, "rows": {k: len(s.text) for k, s in sp.items()},
            "goal_lost": {f"step{t}": g for t, g in zip(STEPS, goal_lost, strict=True)},
            "options": res, "bootstrap": boot}


def _goal_lost(s: states.Split, tok: Any, step: int) -> float:
    """Share of held-out states at ``step`` whose goal line the model does not see whole: the
    line under INSTRUCTION is not inside the last 126 tokens (the tokenizer keeps the end at
    128 tokens, [CLS] and [SEP] included)."""
    lost = []
    for i, g in enumerate(s.groups):
        if g[1] != step:
            continue
        lines = s.text[i].split("\n")
        goal = lines[lines.index("=== INSTRUCTION ===") + 1]
        kept = tok(s.text[i], add_special_tokens=False)["input_ids"][-(states.MAX_LENGTH - 2):]
        want = tok(goal, add_special_tokens=False)["input_ids"]
        lost.append(not any(kept[j: j + len(want)] == want
                            for j in range(len(kept) - len(want) + 1)))
    return float(np.mean(lost))


def provenance() -> dict[str, Any]:
    def git(*a: str) -> str:
        return subprocess.run(["git", *a], cwd=states.ROOT, capture_output=True, text=True,
                              check=False).stdout.strip()

    return {"commit": git("rev-parse", "--short", "HEAD"),
            "render_py_blob": git("hash-object", "amc/value/render.py"),
            "render_py_committed": git("rev-parse", "HEAD:amc/value/render.py"),
            "textcraft_summary_blob": git("hash-object", "amc/envs/textcraft/summary.py"),
            "textcraft_summary_committed": git("rev-parse", "--verify", "-q",
                                               "HEAD:amc/envs/textcraft/summary.py"),
            "load_average_1m": os.getloadavg()[0], "cpus": os.cpu_count()}


def main(argv: list[str] | None = None) -> int:
    from studies.value_options.report import markdown

    ap = argparse.ArgumentParser(prog="python -m studies.value_options.measure")
    ap.add_argument("--variants", nargs="+", default=["old", "goal-kept", "goal+summary"])
    ap.add_argument("--cost", action="store_true", help="also measure fine-tuning states/s")
    ap.add_argument("--cost-only", action="store_true",
                    help="only (re)measure the fine-tuning cost into the existing results.json")
    ap.add_argument("--render", action="store_true",
                    help="only re-render results.md from the existing results.json")
    ap.add_argument("--cache", type=Path, default=states.ROOT / ".cache/value-embeddings")
    ap.add_argument("--regime", choices=("old", "chosen"), default="old",
                    help="old: steps 2 and 4 of the old regime (results.json); chosen: step 1 "
                    "of issue 49's chosen regime (results-chosen.json, studies.value_options"
                    ".chosen)")
    a = ap.parse_args(argv)
    if a.regime == "chosen":
        return _chosen(a.variants, a.cache, a.render)
    if a.render:
        (HERE / "results.md").write_text(markdown(json.loads((HERE / "results.json")
                                                             .read_text())))
        return 0
    _, tok = states.encoder()
    doc: dict[str, Any]
    if a.cost_only:
        doc = json.loads((HERE / "results.json").read_text())
    else:
        doc = {"provenance": provenance(), "beta": BETA, "steps": list(STEPS),
               "seeds": list(SEEDS), "options": OPTIONS, "bootstrap_draws": BOOT}
        doc["variants"] = {v: measure_variant(v, tok, a.cache) for v in a.variants}
    rounds = json.loads((states.ROOT / "evidence/llm-regime/rounds/heldout-values.json")
                        .read_text())
    doc["rounds_full_finetune"] = [{k: r.get(k) for k in ("round", "auc_within_step2",
                                                          "auc_within_step4")}
                                   for r in rounds["rounds"]]
    if a.cost or a.cost_only:
        from studies.value_options.cost import finetune_cost

        doc["cost"] = finetune_cost(states.build("goal-kept", tok)["train"].text)
    elif (HERE / "results.json").is_file():
        doc["cost"] = json.loads((HERE / "results.json").read_text()).get("cost")
    (HERE / "results.json").write_text(json.dumps(doc, indent=1) + "\n")
    (HERE / "results.md").write_text(markdown(json.loads((HERE / "results.json").read_text())))
    print((HERE / "results.md").read_text())
    return 0


def _chosen(variants: list[str], cache: Path, render_only: bool) -> int:
    """``--regime chosen``: write (or only re-render) ``results-chosen.json`` / ``.md``."""
    from studies.value_options.chosen import document
    from studies.value_options.report_chosen import markdown as chosen_markdown

    out = HERE / "results-chosen.json"
    if not render_only:
        _, tok = states.encoder()
        out.write_text(json.dumps(document(variants, tok, cache, provenance()), indent=1)
                       + "\n")
    (HERE / "results-chosen.md").write_text(chosen_markdown(json.loads(out.read_text())))
    print((HERE / "results-chosen.md").read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
