"""Stage ``report``: plots of the evaluation and the summary (``report.summary_file``).

Figures (matplotlib PNG under ``plots/``, each with a DVC plot JSON next to it):

- ``success_vs_n``: success rate against N per method (the paper's Fig. 4 shape; ReAct is the
  N=1 reference line), with standard-error bars;
- ``cost_quality``: the deployable reward (the max-final-weight one, which uses the reward,
  when no selection value was configured) against tokens and dollars per task, one point per
  method;
- ``genealogy``: ESS/N per step and the resampling genealogy (which particle each slot copied)
  of the most-resampled task of the largest SMC run;
- ``calibration``: the value function's predictions against the realised future reward of
  held-out prior rollouts (the evaluation's largest Best-of-N), binned (a reliability curve).

``summary.json`` (``report.summary_file``) holds per-method means and standard errors, the
calibration scores, the settings and the promotion decision (when present); ``amc results-doc``
reads it. :func:`run` is the stage: the report inside an MLflow run of ``amc-report``.
"""

from __future__ import annotations

import asyncio
import io
import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from amc.config import ValueConfig
from amc.pipeline.artifacts import load_plan, load_record, load_results
from amc.pipeline.calibration import prior_states
from amc.pipeline.lineage import stage_run
from amc.pipeline.params import PipelineParams, stage_main
from amc.plots import PNG_META, pyplot
from amc.registry import ENVIRONMENTS, VALUES
from amc.reports.paired import paired_to_bon, paired_to_zero_shot
from amc.results import write_bytes_atomic, write_json_atomic
from amc.runner import METRICS
from amc.smc.records import TaskResult
from amc.types import History

ROLES = ("react", "bon", "smc", "amc", "champion")
LABELS = {"react": "ReAct", "bon": "Best-of-N", "smc": "SMC (zero-shot value)",
          "amc": "AMC (challenger)", "champion": "AMC (champion)"}


def labels(ev: dict[str, Any]) -> dict[str, str]:
    """Legend labels; SMC's says which zero-shot value it ran (``none``: the prior only)."""
    zs = ((ev.get("config") or {}).get("evaluate") or {}).get("zero_shot_value") or {}
    name = zs.get("name", "none")
    smc = "SMC (prior only, no value)" if name == "none" else f"SMC (zero-shot value: {name})"
    return {**LABELS, "smc": smc}


def _save(fig: Any, path: Path) -> None:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight", metadata=PNG_META)
    pyplot().close(fig)
    write_bytes_atomic(path, buf.getvalue())


def success_vs_n(ev: dict[str, Any], out: Path) -> list[dict[str, Any]]:
    """Success and oracle reward (± s.e.) vs N per method role; returns the DVC plot rows."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    grid = sorted(ev["n_grid"])
    rows: list[dict[str, Any]] = [{"n": n} for n in grid]
    names = labels(ev)
    for ax, metric, label in ((axes[0], "success", "success rate"),
                              (axes[1], "oracle_best", "best reward in the pool (oracle)")):
        for role in ROLES:
            pts = sorted((m["n"], m[metric], m[metric + "_se"]) for m in ev["methods"].values()
                         if m["role"] == role)
            if not pts:
                continue
            if role == "react":  # N=1 agent: a reference line across the grid
                ax.axhline(pts[0][1], ls="--", color="grey", label=names[role])
                if metric == "success":
                    for r in rows:
                        r[role] = pts[0][1]
                continue
            ns, ys, es = zip(*pts, strict=True)
            # Dodge each role a little along the (log) N axis: equal results stay visible.
            dodge = 1.0 + 0.035 * (ROLES.index(role) - 2)
            ax.errorbar([n * dodge for n in ns], ys, yerr=es, marker="o", capsize=3,
                        label=names[role])
            if metric == "success":
                for r in rows:
                    r[role] = dict(zip(ns, ys, strict=True)).get(r["n"])
        ax.set_xscale("log", base=2)
        ax.set_xticks(grid, [str(n) for n in grid])
        ax.set(xlabel="particles N", ylabel=label)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"{ev['env']}: quality vs N (mean ± s.e. over tasks, seeds averaged)")
    _save(fig, out / "success_vs_n.png")
    write_json_atomic(out / "success_vs_n.json", plot_points(rows))
    return rows


def cost_quality(ev: dict[str, Any], out: Path) -> list[dict[str, Any]]:
    """Deployable (else max-weight) reward vs tokens and dollars per task, one point per spec."""
    plt = pyplot()
    dep = all(math.isfinite(float(m.get("deployable_reward", math.nan)))
              for m in ev["methods"].values())
    key, ylabel = (("deployable_reward", "deployable reward (value-selected, reward-free)")
                   if dep else ("max_weight_reward", "max final weight reward (uses the reward)"))
    rows = [{"method": s, "tokens": m["tokens_per_task"], "cost_usd": m["cost_per_task"],
             "reward": m[key], "oracle": m["oracle_best"]} for s, m in ev["methods"].items()]
    # A local model costs $0: then the dollar panel would be a single vertical line.
    panels = [("tokens", "tokens per task")] + (
        [("cost_usd", "dollars per task")] if any(r["cost_usd"] for r in rows) else [])
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels) + 2.5, 4),
                             squeeze=False)
    markers = "osD^vP*Xh<>p"
    for ax, (key, label) in zip(axes[0], panels, strict=True):
        for i, r in enumerate(rows):  # a legend, not labels on the points: points coincide
            ax.scatter(r[key], r["reward"], marker=markers[i % len(markers)], s=45,
                       alpha=0.8, label=r["method"])
        ax.set(xlabel=label, ylabel=ylabel)
    axes[0][-1].legend(fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5))
    fig.suptitle("cost vs quality" + ("" if len(panels) > 1 else " (local model: $0)"))
    _save(fig, out / "cost_quality.png")
    write_json_atomic(out / "cost_quality.json", plot_points(rows))
    return rows


def pick_smc_task(ev: dict[str, Any], results: dict[str, list[TaskResult]]
                  ) -> TaskResult | None:
    """The most-resampled task of the largest-N SMC run (AMC preferred)."""
    for role in ("amc", "champion", "smc"):
        specs = sorted((m["n"], s) for s, m in ev["methods"].items() if m["role"] == role)
        if specs:
            spec = specs[-1][1]
            rs = [r for k, v in results.items() if k.startswith(spec + "#") for r in v]
            if rs:
                return max(rs, key=lambda r: sum(s.resampled for s in r.steps))
    return None


PLOT_DIGITS = 6
"""Significant digits of the points in ``plots/*.json``. A reader sees three; the value's float
weights differ run to run and machine to machine around the 8th (BLAS reduction order), which
would otherwise make every fresh ``make run`` rewrite the committed plot files."""


def plot_points(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` with every float rounded to :data:`PLOT_DIGITS` significant digits."""
    def r(x: Any) -> Any:
        return float(f"{x:.{PLOT_DIGITS}g}") if isinstance(x, float) and math.isfinite(x) else x
    return [{k: r(v) for k, v in row.items()} for row in rows]


def genealogy(rec: TaskResult | None, out: Path) -> list[dict[str, Any]]:
    """ESS/N per step and the ancestor lines of resampling steps of one task."""
    plt = pyplot()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    rows: list[dict[str, Any]] = []
    if rec is not None:
        n = rec.n_particles
        rows = [{"t": s.t, "ess_over_n": s.ess / n, "resampled": int(s.resampled)}
                for s in rec.steps]
        a1.plot([r["t"] for r in rows], [r["ess_over_n"] for r in rows], marker="o")
        for s in rec.steps:
            if s.resampled:
                a1.axvline(s.t, color="red", alpha=0.3)
            anc = s.ancestors if s.ancestors else list(range(n))
            for i, a in enumerate(anc):
                a2.plot([s.t - 1, s.t], [a, i], color="red" if s.resampled else "grey",
                        lw=0.8, alpha=0.8)
        a1.set_title(f"task {rec.task_id} ({rec.method}, seed {rec.seed})")
    a1.set(xlabel="step t", ylabel="ESS / N", ylim=(0, 1.05))
    a2.set(xlabel="step t", ylabel="particle slot", title="resampling genealogy")
    _save(fig, out / "genealogy.png")
    write_json_atomic(out / "ess.json", plot_points(rows))
    return rows


def calibration_states(results: dict[str, list[TaskResult]], spec: str, limit: int, seed: int
                       ) -> list[tuple[History, float]]:
    """(prefix history, realised future reward) pairs from ``spec``'s trajectories (the gate's
    own sampling of prior states, :func:`amc.pipeline.calibration.prior_states`)."""
    return prior_states(results, [spec], limit, seed)


async def _score(p: PipelineParams, value: ValueConfig, hs: list[History]) -> list[float]:
    env_opts = ENVIRONMENTS.validate(p.env.name, p.env.options)
    v = VALUES.build(value.name, value.options or None, beta=p.smc.beta, prior=None,
                     env_name=p.env.name, env_options=env_opts)
    try:
        return [float(x) for x in await v.score(hs)]
    finally:
        await v.aclose()


def calibration(p: PipelineParams, ev: dict[str, Any], results: dict[str, list[TaskResult]],
                out: Path) -> dict[str, Any]:
    """Reliability curve of the challenger (else the zero-shot value) on prior rollouts."""
    plt = pyplot()
    chal = (ev.get("models") or {}).get("challenger")
    # models:/ URIs resolve in the params' store, the one the plan resolved them in
    value = p.model_value(chal["uri"]) if chal else p.evaluate.zero_shot_value
    bons = sorted((m["n"], s) for s, m in ev["methods"].items() if m["role"] in ("bon", "react"))
    pairs = calibration_states(results, bons[-1][1], p.report.calibration_states, 0) if bons \
        else []
    fig, ax = plt.subplots(figsize=(4.5, 4))
    stats: dict[str, Any] = {"value": value.name, "states": len(pairs)}
    rows: list[dict[str, Any]] = []
    if pairs:
        pred = np.array(asyncio.run(_score(p, value, [h for h, _ in pairs])))
        real = np.array([y for _, y in pairs])
        edges = np.quantile(pred, np.linspace(0, 1, p.report.calibration_bins + 1))
        which = np.clip(np.searchsorted(edges, pred, side="right") - 1, 0,
                        p.report.calibration_bins - 1)
        for b in range(p.report.calibration_bins):
            sel = which == b
            if sel.any():
                rows.append({"predicted": float(pred[sel].mean()),
                             "realised": float(real[sel].mean()), "count": int(sel.sum())})
        ax.scatter(pred, real, s=6, alpha=0.3, label="states")
        ax.plot([r["predicted"] for r in rows], [r["realised"] for r in rows], marker="o",
                color="C1", label="binned")
        lo, hi = float(min(pred.min(), real.min())), float(max(pred.max(), real.max()))
        ax.plot([lo, hi], [lo, hi], ls="--", color="grey")
        stats["mae"] = float(np.abs(pred - real).mean())
        corr = np.corrcoef(pred, real)[0, 1] if pred.std() > 0 and real.std() > 0 else math.nan
        stats["pearson"] = float(corr) if math.isfinite(corr) else None
        ax.legend(fontsize=8)
    ax.set(xlabel="predicted future reward", ylabel="realised future reward",
           title=f"calibration: {value.name}")
    _save(fig, out / "calibration.png")
    write_json_atomic(out / "calibration.json", plot_points(rows))
    return stats


def paired_differences(ev: dict[str, Any], results: dict[str, list[TaskResult]]
                       ) -> dict[str, dict[str, Any]]:
    """Every SMC-type method minus Best-of-N at the same N, paired by (task, seed), with 95%
    t intervals over tasks (:func:`amc.reports.paired.paired_to_bon`)."""
    return paired_to_bon(ev["methods"], results)


def summary(ev: dict[str, Any], promotion: dict[str, Any] | None,
            calib: dict[str, Any], paired: dict[str, Any] | None = None,
            paired_values: dict[str, Any] | None = None) -> dict[str, Any]:
    """Per-method means and standard errors + calibration + the promotion decision; the paired
    differences to Best-of-N (``paired``) and of AMC to zero-shot SMC (``paired_values``)."""
    keep = ("role", "n", "tasks", "runs", *(k + s for k in METRICS for s in ("", "_se")),
            "tokens_per_task", "cost_per_task")
    return {"env": ev["env"], "eval_status": ev["status"], "n_tasks": ev.get("n_tasks"),
            "seeds": ev.get("seeds"), "config": ev.get("config"),
            "methods": {s: {k: m.get(k) for k in keep} for s, m in ev["methods"].items()},
            "calibration": calib, "paired": paired or {}, "paired_values": paired_values or {},
            "promotion": None if promotion is None else {
                k: promotion.get(k) for k in ("promote", "reason", "challenger_version",
                                              "champion_after", "delta", "se")}}


def report(p: PipelineParams, *, calibrate: bool = True) -> dict[str, Any]:
    """Write every plot and ``summary.json``; returns the summary."""
    ev = load_record(p)
    results = load_results(p, load_plan(p))
    out = p.report.plots_dir
    out.mkdir(parents=True, exist_ok=True)
    success_vs_n(ev, out)
    cost_quality(ev, out)
    genealogy(pick_smc_task(ev, results), out)
    calib = calibration(p, ev, results, out) if calibrate else {}
    pf = p.promote.out_file
    s = summary(ev, json.loads(pf.read_text()) if pf.is_file() else None, calib,
                paired_differences(ev, results), paired_to_zero_shot(ev["methods"], results))
    write_json_atomic(p.report.summary_file, s)
    return s


def run(p: PipelineParams, *, calibrate: bool = True) -> dict[str, Any]:
    """The stage: plots + summary, logged as artifacts in ``amc-report``; the summary."""
    import mlflow

    from amc.pipeline.rounds import active_round

    started = time.time()
    s = report(p, calibrate=calibrate)
    with stage_run("report", params=p.report.model_dump(mode="json"),
                   inputs=[str(p.evaluate.out_dir), str(p.promote.out_file)],
                   uri=p.mlflow_uri, round_=active_round(p), started=started):
        mlflow.log_artifacts(str(p.report.plots_dir), "plots")
        mlflow.log_dict(s, "summary.json")
    return s


def line(p: PipelineParams) -> str:
    """The stage's one-line result on the console: where the plots and the summary are."""
    pngs = sorted(f.name for f in p.report.plots_dir.glob("*.png"))
    return (f"report: {len(pngs)} plots in {p.report.plots_dir}/ ({', '.join(pngs)}); summary "
            f"{p.report.summary_file}; `dvc plots show` renders them offline")


if __name__ == "__main__":  # the DVC stage's cmd
    stage_main(lambda p: (run(p), print(line(p), flush=True)))
