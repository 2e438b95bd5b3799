"""Stage ``promote``: move the registry's ``champion`` alias to the challenger when it is better.

The gate compares the two models on the *same* evaluation (``<evaluate.out_dir>/evaluation.json``
and its results: same tasks, N and seeds). With paired differences d = challenger - champion of the
primary metric over every (task, seed) at N = ``promote.n`` (default: the largest N), the
challenger is promoted when ``mean(d) > 0`` and ``mean(d) > min_se * s.e.(d)``, or when there is
no champion yet. ``oracle_best`` is always reported next to the primary metric.

It never promotes a model whose evaluation failed or is incomplete, nor one whose evaluation is
stale (the challenger or champion alias moved since the evaluation resolved them). The decision
and its evidence go to ``metrics/promotion.json``, to tags on the challenger's model version, to
an MLflow run (experiment ``amc-promote``) with the decision as an artifact.
"""

from __future__ import annotations

import math
import time
from typing import Any

from amc.pipeline.evaluate import load_plan, load_record, load_results, resolve_alias
from amc.pipeline.params import PipelineParams, stage_main
from amc.results import write_json_atomic
from amc.smc.scoring import mean_and_se


def _paired(results: dict[str, list[Any]], a: str, b: str, seeds: list[int], metric: str
            ) -> list[float]:
    diffs = []
    for s in seeds:
        rb = {r.task_id: r for r in results.get(f"{b}#{s}", [])}
        for r in results.get(f"{a}#{s}", []):
            if r.task_id in rb:
                diffs.append(float(r.metrics[metric]) - float(rb[r.task_id].metrics[metric]))
    return diffs


def decide(p: PipelineParams, eval_json: dict[str, Any], results: dict[str, list[Any]],
           current: dict[str, str | None]) -> dict[str, Any]:
    """The promotion decision (pure: no registry writes). ``current`` = aliases now."""
    models = eval_json.get("models") or {}
    chal, champ = models.get("challenger"), models.get("champion")
    n = p.promote.n or max(eval_json.get("n_grid") or [0])
    d: dict[str, Any] = {
        "promote": False, "metric": p.promote.metric, "n": n, "model": models.get("name"),
        "challenger_version": chal and chal.get("version"),
        "champion_version": champ and champ.get("version"),
        "eval_status": eval_json.get("status"), "delta": None, "se": None,
        "oracle_delta": None, "oracle_se": None, "n_pairs": 0,
        "challenger_mean": None, "champion_mean": None,
    }
    def no(reason: str) -> dict[str, Any]:
        return {**d, "reason": reason}

    if eval_json.get("status") != "complete":
        return no(f"evaluation is {eval_json.get('status')!r}, not complete: never promote")
    if not chal or not chal.get("version"):
        return no("the evaluated challenger is not a registry version")
    if current.get("challenger") != chal["version"]:
        return no(f"stale evaluation: challenger is now v{current.get('challenger')}, "
                  f"evaluated v{chal['version']}")
    champ_now = current.get("champion")
    if champ_now == chal["version"]:
        return no(f"v{chal['version']} is already the champion")
    if champ_now != (champ and champ.get("version")):
        return no(f"stale evaluation: champion is now v{champ_now}, evaluated "
                  f"{'v' + champ['version'] if champ else 'none'}")
    methods = eval_json.get("methods", {})
    a = f"smc@{n}+challenger"
    if a not in methods:
        return no(f"no {a} in the evaluation (n_grid {eval_json.get('n_grid')})")
    d["challenger_mean"] = methods[a][p.promote.metric]
    if champ is None:
        return {**d, "promote": True, "reason": "no champion yet"}
    b = f"smc@{n}+champion"
    if b not in methods:
        return no(f"no {b} in the evaluation")
    d["champion_mean"] = methods[b][p.promote.metric]
    seeds = list(eval_json.get("seeds") or [])
    diffs = _paired(results, a, b, seeds, p.promote.metric)
    oracle = _paired(results, a, b, seeds, "oracle_best")
    if not diffs:
        return no("no paired (task, seed) results of challenger and champion")
    d["delta"], d["se"] = mean_and_se(diffs)
    d["oracle_delta"], d["oracle_se"] = mean_and_se(oracle)
    d["n_pairs"] = len(diffs)
    if d["delta"] > 0 and d["delta"] > p.promote.min_se * d["se"]:
        return {**d, "promote": True, "reason": (
            f"{p.promote.metric} +{d['delta']:.4f} > {p.promote.min_se:g} x s.e. "
            f"{d['se']:.4f} over {len(diffs)} pairs")}
    return no(f"{p.promote.metric} change {d['delta']:+.4f} is not above "
              f"{p.promote.min_se:g} x s.e. {d['se']:.4f}: keep v{champ_now}")


def current_aliases(p: PipelineParams, name: str | None) -> dict[str, str | None]:
    """Versions the challenger and champion aliases point at now."""
    if not name:
        return {"challenger": None, "champion": None}
    return {"challenger": resolve_alias(name, "challenger", p.mlflow_uri),
            "champion": resolve_alias(name, p.promote.alias, p.mlflow_uri)}


def markdown(d: dict[str, Any]) -> str:
    """A human-readable account of the decision (Prefect/MLflow artifact)."""
    verdict = "PROMOTED" if d["promote"] else "KEPT"
    lines = [f"# Promotion decision: {verdict}", "", f"**{d['reason']}**", "",
             "| field | value |", "|---|---|"]
    for k in ("model", "challenger_version", "champion_version", "eval_status", "metric", "n",
              "challenger_mean", "champion_mean", "delta", "se", "oracle_delta", "oracle_se",
              "n_pairs"):
        v = d.get(k)
        lines.append(f"| {k} | {v:.4f} |" if isinstance(v, float) and math.isfinite(v)
                     else f"| {k} | {v} |")
    return "\n".join(lines) + "\n"


def promote(p: PipelineParams, *, track: bool = True) -> dict[str, Any]:
    """Decide, move the alias and tag the version when promoting, record everything."""
    import mlflow

    eval_json = load_record(p)
    try:
        results = load_results(p, load_plan(p))
    except FileNotFoundError:
        results = {}
    name = (eval_json.get("models") or {}).get("name")
    d = decide(p, eval_json, results, current_aliases(p, name))
    d["decided_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    client = mlflow.MlflowClient() if name else None
    if d["promote"] and client is not None and name:
        client.set_registered_model_alias(name, p.promote.alias, d["challenger_version"])
    if client is not None and name and d["challenger_version"]:
        evidence = {"promotion.decision": "promoted" if d["promote"] else "kept",
                    "promotion.reason": d["reason"][:500], "promotion.metric": d["metric"],
                    "promotion.n": str(d["n"]), "promotion.delta": str(d["delta"]),
                    "promotion.se": str(d["se"]), "promotion.oracle_delta": str(d["oracle_delta"]),
                    "promotion.previous_champion": str(d["champion_version"]),
                    "promotion.decided_at": d["decided_at"]}
        for k, v in evidence.items():
            client.set_model_version_tag(name, d["challenger_version"], k, v)
    d["champion_after"] = current_aliases(p, name)["champion"] if name else None
    write_json_atomic(p.promote.out_file, d)
    write_json_atomic(p.promote.metrics_file, flat_metrics(d))
    if track:
        _log_run(p, d)
    return d


def flat_metrics(d: dict[str, Any]) -> dict[str, float | int]:
    """The DVC metrics of a decision: numbers only (absent values are left out)."""
    out: dict[str, float | int] = {"promoted": int(bool(d["promote"])),
                                   "n_pairs": int(d.get("n_pairs") or 0)}
    for k in ("delta", "se", "oracle_delta"):
        if isinstance(d.get(k), (int, float)) and math.isfinite(d[k]):
            out[k] = round(float(d[k]), 4)
    for k in ("challenger_version", "champion_after"):
        if d.get(k) is not None:
            out[k] = int(d[k])
    return out


def run(p: PipelineParams) -> dict[str, Any]:
    """The stage: the promotion gate (records its own run in ``amc-promote``)."""
    return promote(p)


def _log_run(p: PipelineParams, d: dict[str, Any]) -> None:
    import mlflow

    from amc.pipeline.lineage import stage_run

    with stage_run("promote", params=p.promote.model_dump(mode="json"),
                   inputs=[str(p.evaluate.out_dir)],
                   uri=p.mlflow_uri, tags={"promotion.decision": str(d["promote"]).lower()}):
        mlflow.log_metrics({k: float(d[k]) for k in ("delta", "se", "oracle_delta", "oracle_se")
                            if isinstance(d.get(k), (int, float))})
        mlflow.log_metric("promoted", float(d["promote"]))
        mlflow.log_dict(d, "promotion.json")
        mlflow.log_text(markdown(d), "promotion.md")


if __name__ == "__main__":  # the DVC stage's cmd
    stage_main(run)
