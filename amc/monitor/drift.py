"""Drift monitor: the champion against *fresh* rollouts of the prior as it is today.

A value head predicts the future reward of the prior it was trained on. When the black-box
prior changes under us (a provider updates its model, a skill knob moves), the head goes stale:
its predictions drift from what the prior now realises, and the SMC it twists succeeds less.
Nothing in a champion-vs-challenger evaluation notices that (both models see the same drifted
prior), so the monitor compares the champion with *its own* record at promotion:

- **gain**: the AMC gain over Best-of-N, success of SMC twisted by the champion
  (``smc@N+champion``) minus ``bon@N``'s on the same fresh (task, seed) pairs, with its paired
  t interval over tasks and exact sign-flip p (:func:`amc.stats.paired_difference`): what the
  head is for, so what a stale head loses first;
- **success**: of ``smc@N+champion`` on the fresh seeds;
- **calibration**: mean absolute error and mean signed error (bias) of the champion's
  predicted vs the realised future reward on states of fresh prior rollouts (``bon@G``,
  ``drift.rollouts`` per task);

against ``baseline.gain``, ``baseline.success``, ``baseline.calibration_mae`` and
``baseline.calibration_bias``, which the promotion gate tags on the version it promotes
(measured on the frozen evaluation set). Drift is marked on what got *worse* past a threshold:
the gain fell by more than ``drift.max_gain_drop``, success by more than
``drift.max_success_drop``, the MAE grew by more than ``drift.max_calibration_increase``, or
the bias moved away from 0 by more than ``drift.max_bias_shift``
(:func:`amc.pipeline.gate_stats.drift_check`); a calibration that improved never flags. Each
side carries its standard errors (``baseline.<q>_se``: success and gain averaged within task,
over tasks; calibration clustered by task), and a worsening past its threshold flags only when
it also clears sampling noise at ``drift.level`` (a movement on an unchanged prior is not
drift).

Check k runs on the frozen evaluation set's tasks (else the evaluation's split) with the fresh
seed block ``drift.seed_base + k * drift.seeds_per_check ...``, never an evaluation's seeds,
into ``<drift.out_dir>/check-<k>/`` (resumable: a rerun of an interrupted check finishes it).
Each check records ``drift.json`` there, one line of ``history.jsonl``, ``latest.json``, tags on
the champion's version (``drift.*``) and an MLflow run (experiment ``amc-drift``), with the
prior's identity (:func:`amc.pipeline.rounds.prior_identity`) so a drift can be attributed.
Triggering the retraining is the flow's job (:mod:`flows.drift`).
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

from amc.config import RunConfig, ValueConfig
from amc.pipeline.artifacts import resolve_alias
from amc.pipeline.calibration import model_calibration, prior_states
from amc.pipeline.gate_stats import drift_check
from amc.pipeline.guards import by_pair, success_ses
from amc.pipeline.params import PipelineParams, model_name, stage_main
from amc.results import read_jsonl, write_json_atomic
from amc.stats import paired_difference

HISTORY = "history.jsonl"
LATEST = "latest.json"
QUANTITIES = ("gain", "success", "calibration_mae", "calibration_bias")
"""What a check compares with the champion's promotion record (tags ``baseline.<q>``)."""


def history(p: PipelineParams) -> list[dict[str, Any]]:
    """Every finished check, oldest first."""
    path = p.drift.out_dir / HISTORY
    return list(read_jsonl(path)) if path.is_file() else []


def fresh_seeds(p: PipelineParams, k: int) -> tuple[int, ...]:
    """The seed block of check ``k`` (disjoint across checks)."""
    d = p.drift
    return tuple(d.seed_base + k * d.seeds_per_check + i for i in range(d.seeds_per_check))


def monitor_tasks(p: PipelineParams) -> list[str]:
    """The frozen evaluation set's tasks, else the evaluation split's (as evaluate picks them)."""
    if p.promote.frozen_set.is_file():
        return list(json.loads(p.promote.frozen_set.read_text())["tasks"])
    from amc.registry import ENVIRONMENTS
    from amc.runner import task_list

    suite = ENVIRONMENTS.build(p.env.name, p.env.options)
    try:
        return task_list(RunConfig(env=p.env, split=p.evaluate.split,
                                   max_tasks=p.evaluate.max_tasks), suite)
    finally:
        suite.close()


def baseline_of(tags: dict[str, str]) -> dict[str, float | None]:
    """The champion's promotion-time calibration and success (None when not recorded)."""
    out: dict[str, float | None] = {}
    for k in (*QUANTITIES, *(f"{q}_se" for q in QUANTITIES)):
        try:
            out[k] = float(tags[f"baseline.{k}"])
        except (KeyError, ValueError):
            out[k] = None
    return out


def measure(p: PipelineParams, uri: str, tasks: list[str], seeds: tuple[int, ...],
            out_dir: Path, k: int) -> dict[str, Any]:
    """Fresh prior rollouts and champion runs; the champion's calibration, success and AMC
    gain over Best-of-N (paired by task and seed, with its t interval and sign-flip p) now."""
    from amc.runner import run_methods

    g, n = p.drift.rollouts, p.promote.n or max(p.evaluate.n_grid)
    prior_spec, bon_spec, champ_spec = f"bon@{g}", f"bon@{n}", f"smc@{n}+champion"
    specs = tuple(dict.fromkeys((prior_spec, bon_spec, champ_spec)))
    cfg = RunConfig(env=p.env, prior=p.prior, smc=p.smc, value=p.evaluate.zero_shot_value,
                    values={"champion": ValueConfig(name=p.evaluate.learned_value,
                                                    options={"model": uri})},
                    methods=specs, task_ids=tuple(tasks), seeds=seeds,
                    max_concurrent_tasks=p.evaluate.max_concurrent_tasks,
                    max_concurrent_particles=p.evaluate.max_concurrent_particles,
                    out_dir=out_dir)
    print(f"drift check {k}: {len(tasks)} tasks x {len(seeds)} seeds, {', '.join(specs)} "
          f"(progress lines follow)", flush=True)
    results = asyncio.run(run_methods(cfg, progress=True)).results
    pairs = prior_states(results, [prior_spec], p.drift.calibration_states, k)
    champ, bon = by_pair(results, champ_spec), by_pair(results, bon_spec)
    success = sum(champ.values()) / len(champ) if champ else None
    gain = paired_difference(champ, bon).to_dict() if champ and bon else None
    return {**model_calibration(p, uri, pairs), "success": success,
            "gain": None if gain is None else gain["mean"], "gain_interval": gain,
            **success_ses(results, champ_spec, bon_spec),
            "gain_by_task": gain_by_task(champ, bon),
            "calibration_states": len(pairs), "champion_runs": len(champ),
            "methods": list(specs)}


def gain_by_task(champ: dict[tuple[str, int], float], bon: dict[tuple[str, int], float]
                 ) -> dict[str, float]:
    """The gain (champion - Best-of-N success) per task, averaged over its paired seeds, so two
    checks (different seed blocks, the same tasks) can be compared task by task."""
    per: dict[str, list[float]] = {}
    for key, v in champ.items():
        if key in bon:
            per.setdefault(key[0], []).append(v - bon[key])
    return {t: sum(d) / len(d) for t, d in sorted(per.items())}


def monitor(p: PipelineParams, *, track: bool = True) -> dict[str, Any]:
    """One drift check of the champion; the record (``drift`` is None without a champion)."""
    import mlflow

    from amc.pipeline.rounds import active_round, prior_identity

    name = model_name(p)
    version = resolve_alias(name, p.promote.alias, p.mlflow_uri)
    k = len(history(p))
    rec: dict[str, Any] = {
        "check": k, "model": name, "version": version, "drift": None, "reasons": [],
        "prior": prior_identity(p), "round": active_round(p),
        "checked_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if version is None:
        return {**rec, "reasons": [f"no {p.promote.alias} of {name}: nothing to monitor"]}
    client = mlflow.MlflowClient()
    baseline = baseline_of(dict(client.get_model_version(name, version).tags or {}))
    seeds = fresh_seeds(p, k)
    out = p.drift.out_dir / f"check-{k:04d}"
    now = measure(p, f"models:/{name}/{version}", monitor_tasks(p), seeds, out, k)
    d = p.drift
    verdict = drift_check(baseline, now, max_calibration_increase=d.max_calibration_increase,
                          max_bias_shift=d.max_bias_shift,
                          max_success_drop=d.max_success_drop, max_gain_drop=d.max_gain_drop,
                          level=d.level)
    rec.update(seeds=list(seeds), baseline=baseline, now=now, **verdict.as_dict())
    write_json_atomic(out / "drift.json", rec)
    write_json_atomic(p.drift.out_dir / LATEST, rec)
    with open(p.drift.out_dir / HISTORY, "a") as fh:
        fh.write(json.dumps(rec) + "\n")
    for key, val in {"drift.status": "drift" if rec["drift"] else "ok",
                     "drift.checked_at": rec["checked_at"], "drift.check": str(k),
                     "drift.reasons": "; ".join(rec["reasons"])[:500],
                     "drift.calibration_mae": str(now["calibration_mae"]),
                     "drift.calibration_bias": str(now["calibration_bias"]),
                     "drift.success": str(now["success"]),
                     "drift.gain": str(now["gain"]),
                     "drift.prior": json.dumps(rec["prior"], sort_keys=True)[:500]}.items():
        client.set_model_version_tag(name, version, key, val)
    if track:
        _log_run(p, rec)
    return rec


def markdown(rec: dict[str, Any]) -> str:
    """The check as a human-readable report (Prefect/MLflow artifact)."""
    head = {None: "NO CHAMPION", True: "DRIFT", False: "no drift"}[rec["drift"]]
    where = "rounds off" if rec.get("round") is None else f"round {rec['round']}"
    lines = [f"# Drift check {rec['check']}: {head}", "",
             f"- model: {rec['model']} v{rec['version']}, {where}",
             f"- prior: {rec['prior']['name']} {json.dumps(rec['prior']['options'])}",
             f"- seeds: {rec.get('seeds')}", ""]
    if rec["drift"] is not None:
        lines += ["| quantity | at promotion | now |", "|---|---|---|"]
        for q in QUANTITIES:
            lines.append(f"| {q} | {fmt(rec['baseline'].get(q))} | {fmt(rec['now'].get(q))} |")
    lines += ["", *(f"- {r}" for r in rec["reasons"])]
    return "\n".join(lines) + "\n"


def fmt(v: Any) -> str:
    """A number for people: 4 significant digits (``n/a`` when not measured)."""
    if v is None:
        return "n/a"
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def line(rec: dict[str, Any]) -> str:
    """The check in one line: the verdict, why, and the quantities now vs at promotion."""
    head = {None: "no champion", True: "DRIFT", False: "no drift"}[rec["drift"]]
    now, base = rec.get("now") or {}, rec.get("baseline") or {}
    qs = "; ".join(f"{q} {fmt(now.get(q))} (promotion {fmt(base.get(q))})"
                   for q in QUANTITIES if q in now)
    why = "; ".join(rec["reasons"])
    return f"drift check {rec['check']}: {head}" + (f": {qs}" if qs else "") + (
        f" -- {why}" if why else "")


def _log_run(p: PipelineParams, rec: dict[str, Any]) -> None:
    import mlflow

    from amc.pipeline.lineage import stage_run

    with stage_run("drift", params=p.drift.model_dump(mode="json"), uri=p.mlflow_uri,
                   tags={"drift.status": "drift" if rec["drift"] else "ok"},
                   round_=rec.get("round"), detail="drift" if rec["drift"] else "ok"):
        mlflow.log_metrics({f"{q}.{k}": float(v) for q in ("baseline", "now")
                            for k, v in rec[q].items()
                            if k in QUANTITIES and v is not None})
        mlflow.log_metric("drift", float(bool(rec["drift"])))
        mlflow.log_dict(rec, "drift.json")
        mlflow.log_text(markdown(rec), "drift.md")


def run(p: PipelineParams) -> dict[str, Any]:
    """``python -m amc.monitor.drift``: one check (prints the verdict)."""
    rec = monitor(p)
    print(markdown(rec))
    return rec


if __name__ == "__main__":
    stage_main(run)
