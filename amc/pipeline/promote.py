"""Stage ``promote``: the promotion gate, challenger vs champion on a frozen evaluation set.

Both models run the *same* evaluation (``<evaluate.out_dir>/evaluation.json`` and its results:
same tasks, N and seeds). The first gated evaluation freezes its (tasks, seeds) into
``promote.frozen_set``; an evaluation on any other set is refused, so every decision of a model's
history is measured on the same ground. With the paired differences d = challenger - champion of
``promote.metric`` over every (task, seed) at N = ``promote.n`` (default: the largest N), the
challenger is promoted when the one-sided paired t test of ``E[d] > promote.min_effect`` passes
at ``promote.level`` (:mod:`amc.pipeline.gate_stats`) and no guard vetoes it: tokens per task
(``promote.max_token_increase``) and the value's calibration error on the evaluation's prior
rollouts (``promote.max_calibration_increase``). With no champion yet the challenger is promoted.
A champion that the drift monitor marked (tag ``drift.status = drift``) only needs to be
matched: a better calibrated challenger not worse than ``promote.drift_margin`` replaces it.

It never promotes a model whose evaluation failed or is incomplete, nor one whose evaluation is
stale (the challenger or champion alias moved since the evaluation resolved them). The decision
and its evidence go to ``metrics/promotion.json``, to tags on the challenger's model version
(``promotion.*``; a promoted version also gets ``baseline.calibration_mae`` and
``baseline.success``, which the drift monitor compares fresh rollouts with), and to an MLflow
run (experiment ``amc-promote``) with the decision as an artifact.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import time
from pathlib import Path
from typing import Any

from amc.pipeline.evaluate import load_plan, load_record, load_results, resolve_alias
from amc.pipeline.gate_stats import (
    calibration_bias,
    calibration_mae,
    guard_vetoes,
    paired_test,
)
from amc.pipeline.headline import promotion_headline
from amc.pipeline.lineage import annotate_version
from amc.pipeline.params import PipelineParams, stage_main
from amc.pipeline.rounds import active_round, finish_round
from amc.results import write_json_atomic
from amc.smc.records import TaskResult
from amc.smc.scoring import mean_and_se
from amc.types import History


def _paired(results: dict[str, list[Any]], a: str, b: str, seeds: list[int], metric: str
            ) -> list[float]:
    diffs = []
    for s in seeds:
        rb = {r.task_id: r for r in results.get(f"{b}#{s}", [])}
        for r in results.get(f"{a}#{s}", []):
            if r.task_id in rb:
                diffs.append(float(r.metrics[metric]) - float(rb[r.task_id].metrics[metric]))
    return diffs


def eval_set(env: str, split: str, tasks: list[str], seeds: list[int]) -> dict[str, Any]:
    """The evaluation set as a record, with a digest that identifies it."""
    body = {"env": env, "split": split, "tasks": [str(t) for t in tasks],
            "seeds": [int(s) for s in seeds]}
    digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]
    return {**body, "digest": digest}


def check_frozen(path: Path, current: dict[str, Any]) -> str | None:
    """Freeze ``current`` when nothing is frozen yet; the refusal reason when it differs."""
    if not path.is_file():
        write_json_atomic(path, {**current, "frozen_at": time.strftime(
            "%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
        return None
    frozen = json.loads(path.read_text())
    if frozen.get("digest") != current["digest"]:
        return (f"evaluation set {current['digest']} ({len(current['tasks'])} tasks, seeds "
                f"{current['seeds']}) is not the frozen set {frozen.get('digest')} of {path}")
    return None


def decide(p: PipelineParams, eval_json: dict[str, Any], results: dict[str, list[Any]],
           current: dict[str, str | None], guards: dict[str, dict[str, Any]] | None = None,
           set_refusal: str | None = None, champion_drifted: bool = False) -> dict[str, Any]:
    """The promotion decision (pure: no registry writes). ``current`` = aliases now;
    ``guards`` = per role (challenger/champion) tokens_per_task and calibration_mae;
    ``set_refusal`` = why the evaluation set is not the frozen one (None: it is);
    ``champion_drifted`` = the drift monitor marked the champion (see :func:`_test_and_guard`)."""
    g = p.promote
    models = eval_json.get("models") or {}
    chal, champ = models.get("challenger"), models.get("champion")
    n = g.n or max(eval_json.get("n_grid") or [0])
    d: dict[str, Any] = {
        "promote": False, "metric": g.metric, "n": n, "model": models.get("name"),
        "challenger_version": chal and chal.get("version"),
        "champion_version": champ and champ.get("version"),
        "eval_status": eval_json.get("status"), "level": g.level, "min_effect": g.min_effect,
        "delta": None, "se": None, "p_value": None, "lower_bound": None,
        "oracle_delta": None, "oracle_se": None, "n_pairs": 0,
        "challenger_mean": None, "champion_mean": None, "guards": guards or {}, "vetoes": [],
        "champion_drifted": champion_drifted,
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
    if set_refusal:
        return no(f"never promote on another evaluation set: {set_refusal}")
    methods = eval_json.get("methods", {})
    a = f"smc@{n}+challenger"
    if a not in methods:
        return no(f"no {a} in the evaluation (n_grid {eval_json.get('n_grid')})")
    if g.metric not in methods[a]:
        return no(f"metric {g.metric!r} is not in the evaluation's results")
    d["challenger_mean"] = methods[a][g.metric]
    if champ is None:
        return {**d, "promote": True, "reason": "no champion yet"}
    b = f"smc@{n}+champion"
    if b not in methods:
        return no(f"no {b} in the evaluation")
    d["champion_mean"] = methods[b][g.metric]
    return _test_and_guard(p, d, results, list(eval_json.get("seeds") or []), a, b, champ_now)


def _test_and_guard(p: PipelineParams, d: dict[str, Any], results: dict[str, list[Any]],
                    seeds: list[int], a: str, b: str, champ_now: str | None) -> dict[str, Any]:
    """The paired one-sided test, then the guards' vetoes.

    A champion the drift monitor marked has lost its claim: the question becomes
    non-inferiority (``E[d] > -promote.drift_margin``) *and* a better calibrated challenger on
    the current prior's rollouts, so a retrained head that recovers the calibration replaces
    it unless it is clearly worse on the metric.
    """
    g = p.promote
    if d["champion_drifted"]:
        mine = (d["guards"].get("challenger") or {}).get("calibration_mae")
        theirs = (d["guards"].get("champion") or {}).get("calibration_mae")
        if mine is None or theirs is None or not mine < theirs:
            return {**d, "reason": f"champion v{champ_now} drifted, but the challenger's "
                    f"calibration error {mine} is not below its {theirs}: keep v{champ_now}"}
        g = g.model_copy(update={"min_effect": -g.drift_margin})
        d["min_effect"] = g.min_effect
    if g.metric is None:  # resolved by PipelineParams; a bare PromoteParams has no default
        return {**d, "reason": "promote.metric is not set"}
    diffs = _paired(results, a, b, seeds, g.metric)
    if not diffs:
        return {**d, "reason": "no paired (task, seed) results of challenger and champion"}
    oracle = _paired(results, a, b, seeds, "oracle_best")
    d["oracle_delta"], d["oracle_se"] = mean_and_se(oracle)
    t = paired_test(diffs, min_effect=g.min_effect, level=g.level)
    d.update(delta=t.mean, se=t.se, p_value=t.p_value, lower_bound=t.lower_bound,
             n_pairs=t.n)
    if not t.passes:
        return {**d, "reason": (
            f"{g.metric} change {t.mean:+.4f} (s.e. {t.se:.4f}, {t.n} pairs) is not above "
            f"{g.min_effect:g} at level {g.level:g} (p={t.p_value:.3g}): keep v{champ_now}")}
    guards = d["guards"]
    d["vetoes"] = guard_vetoes(guards.get("challenger", {}), guards.get("champion", {}),
                               max_token_increase=g.max_token_increase,
                               max_calibration_increase=g.max_calibration_increase)
    if d["vetoes"]:
        return {**d, "reason": f"vetoed by guard: {'; '.join(d['vetoes'])}: keep v{champ_now}"}
    return {**d, "promote": True, "reason": (
        f"{g.metric} +{t.mean:.4f} > {g.min_effect:g} at level {g.level:g} "
        f"(p={t.p_value:.3g}, lower bound {t.lower_bound:+.4f}, {t.n} pairs)")}


def prior_states(results: dict[str, list[TaskResult]], specs: list[str], limit: int, seed: int
                 ) -> list[tuple[History, float]]:
    """(prefix history, realised future reward) of the trajectories of ``specs``, at most
    ``limit`` (a seeded subsample, so both models are scored on the same states)."""
    import numpy as np

    pairs = []
    for key in sorted(results):
        if key.split("#")[0] not in specs:
            continue
        for r in results[key]:
            for tr in r.trajectories:
                rewards = [s.reward for s in tr.steps]
                for k in range(len(tr.steps)):
                    pairs.append((History(r.task_id, r.observation0, tr.steps[:k], budget=r.budget),
                                  float(sum(rewards[k:]))))
    if len(pairs) > limit:
        idx = np.random.default_rng(seed).choice(len(pairs), size=limit, replace=False)
        pairs = [pairs[i] for i in sorted(idx)]
    return pairs


def model_calibration(p: PipelineParams, uri: str, pairs: list[tuple[History, float]]
                      ) -> dict[str, float | None]:
    """Calibration error (MAE) and bias (mean predicted - realised), reward units, of the
    value model ``uri`` on ``pairs``."""
    if not pairs:
        return {"calibration_mae": None, "calibration_bias": None}
    from amc.registry import ENVIRONMENTS, VALUES

    async def score() -> list[float]:
        env_opts = ENVIRONMENTS.validate(p.env.name, p.env.options)
        v = VALUES.build(p.evaluate.learned_value, {"model": uri}, beta=p.smc.beta,
                         prior=None, env_name=p.env.name, env_options=env_opts)
        try:
            return [float(x) for x in await v.score([h for h, _ in pairs])]
        finally:
            await v.aclose()

    pred, real = asyncio.run(score()), [y for _, y in pairs]
    return {"calibration_mae": calibration_mae(pred, real),
            "calibration_bias": calibration_bias(pred, real)}


def measure_guards(p: PipelineParams, eval_json: dict[str, Any],
                   results: dict[str, list[TaskResult]]) -> dict[str, dict[str, Any]]:
    """Tokens per task and calibration error of each evaluated model (the guards' inputs).

    Calibration is measured on the evaluation's prior rollouts (react/bon trajectories: the
    prior's own distribution, not one tilted by either model)."""
    n = p.promote.n or max(eval_json.get("n_grid") or [0])
    methods = eval_json.get("methods") or {}
    priors = [s for s, m in methods.items() if m.get("role") in ("bon", "react")]
    pairs = prior_states(results, priors, p.promote.calibration_states, 0)
    out: dict[str, dict[str, Any]] = {}
    for role in ("challenger", "champion"):
        m = (eval_json.get("models") or {}).get(role)
        spec = methods.get(f"smc@{n}+{role}")
        if not m or spec is None:
            continue
        out[role] = {"tokens_per_task": spec.get("tokens_per_task"),
                     "success": spec.get("success"),
                     **model_calibration(p, m["uri"], pairs),
                     "calibration_states": len(pairs)}
    return out


def drifted(name: str | None, version: str | None) -> bool:
    """Whether the drift monitor's last check marked this version (tag ``drift.status``)."""
    if not name or not version:
        return False
    import mlflow

    tags = mlflow.MlflowClient().get_model_version(name, version).tags or {}
    return tags.get("drift.status") == "drift"


def current_aliases(p: PipelineParams, name: str | None) -> dict[str, str | None]:
    """Versions the challenger and champion aliases point at now."""
    if not name:
        return {"challenger": None, "champion": None}
    return {"challenger": resolve_alias(name, "challenger", p.mlflow_uri),
            "champion": resolve_alias(name, p.promote.alias, p.mlflow_uri)}


_ROWS = ("model", "challenger_version", "champion_version", "eval_status", "eval_set", "metric",
         "n", "level", "min_effect", "challenger_mean", "champion_mean", "delta", "se",
         "p_value", "lower_bound", "oracle_delta", "oracle_se", "n_pairs")


def markdown(d: dict[str, Any]) -> str:
    """A human-readable account of the decision (Prefect/MLflow artifact)."""
    verdict = "PROMOTED" if d["promote"] else "KEPT"
    lines = [f"# Promotion decision: {verdict}", "", f"**{d['reason']}**", "",
             "| field | value |", "|---|---|"]
    for k in _ROWS:
        lines.append(f"| {k} | {_fmt(d.get(k))} |")
    if d.get("guards"):
        lines += ["", "| guard | challenger | champion |", "|---|---|---|"]
        for k in ("tokens_per_task", "calibration_mae", "calibration_bias", "success"):
            lines.append(f"| {k} | {_fmt(d['guards'].get('challenger', {}).get(k))} | "
                         f"{_fmt(d['guards'].get('champion', {}).get(k))} |")
    if d.get("vetoes"):
        lines += ["", "Vetoes: " + "; ".join(d["vetoes"])]
    return "\n".join(lines) + "\n"


def _fmt(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) and math.isfinite(v) else str(v)


def load_inputs(p: PipelineParams) -> tuple[dict[str, Any], dict[str, list[TaskResult]],
                                            dict[str, Any] | None]:
    """The evaluation record, its results and its evaluation set (None without a plan)."""
    eval_json = load_record(p)
    try:
        pl = load_plan(p)
    except FileNotFoundError:
        return eval_json, {}, None
    return eval_json, load_results(p, pl), eval_set(p.env.name, p.evaluate.split,
                                                    pl["tasks"], pl["seeds"])


def promote(p: PipelineParams, *, track: bool = True) -> dict[str, Any]:
    """Decide, move the alias and tag the version when promoting, record everything."""
    import mlflow

    eval_json, results, es = load_inputs(p)
    name = (eval_json.get("models") or {}).get("name")
    current = current_aliases(p, name)
    refusal, guards = None, {}
    ready = eval_json.get("status") == "complete" and es is not None
    if ready and es is not None:
        refusal = check_frozen(p.promote.frozen_set, es)
        guards = measure_guards(p, eval_json, results) if refusal is None else {}
    d = decide(p, eval_json, results, current, guards, refusal,
               champion_drifted=drifted(name, current.get("champion")))
    d["eval_set"] = es and es["digest"]
    d["decided_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    client = mlflow.MlflowClient() if name else None
    if d["promote"] and client is not None and name:
        client.set_registered_model_alias(name, p.promote.alias, d["challenger_version"])
    if client is not None and name and d["challenger_version"]:
        for k, v in evidence_tags(d).items():
            client.set_model_version_tag(name, d["challenger_version"], k, v)
        annotate_version(name, d["challenger_version"],
                         f"Gate {d['decided_at']}: {'promoted' if d['promote'] else 'kept'}, "
                         f"{d['reason']}")
    d["champion_after"] = current_aliases(p, name)["champion"] if name else None
    write_json_atomic(p.promote.out_file, d)
    write_json_atomic(p.promote.metrics_file, promotion_headline(d))  # the rest: out_file
    r = active_round(p)
    if track:
        _log_run(p, d, r)
    finish_round(p, d)  # with rounds: the decision closes the round
    return d


def evidence_tags(d: dict[str, Any]) -> dict[str, str]:
    """Model-version tags of a decision; a promoted version also gets its drift baseline."""
    tags = {"promotion.decision": "promoted" if d["promote"] else "kept",
            "promotion.reason": d["reason"][:500], "promotion.previous_champion":
            str(d["champion_version"]), "promotion.vetoes": "; ".join(d["vetoes"])[:500]}
    for k in ("metric", "n", "level", "min_effect", "champion_drifted", "delta", "se",
              "p_value", "lower_bound", "oracle_delta", "n_pairs", "eval_set", "decided_at"):
        tags[f"promotion.{k}"] = str(d.get(k))
    mine = (d.get("guards") or {}).get("challenger") or {}
    for k in ("tokens_per_task", "calibration_mae", "calibration_bias", "success"):
        tags[f"promotion.challenger_{k}"] = str(mine.get(k))
        if d["promote"]:
            tags[f"baseline.{k}"] = str(mine.get(k))
    return tags


def flat_metrics(d: dict[str, Any]) -> dict[str, float | int]:
    """The DVC metrics of a decision: numbers only (absent values are left out)."""
    out: dict[str, float | int] = {"promoted": int(bool(d["promote"])),
                                   "n_pairs": int(d.get("n_pairs") or 0)}
    for k in ("delta", "se", "p_value", "lower_bound", "oracle_delta"):
        if isinstance(d.get(k), (int, float)) and math.isfinite(d[k]):
            out[k] = round(float(d[k]), 4)
    for k in ("challenger_version", "champion_after"):
        if d.get(k) is not None:
            out[k] = int(d[k])
    return out


def run(p: PipelineParams) -> dict[str, Any]:
    """The stage: the promotion gate (records its own run in ``amc-promote``)."""
    return promote(p)


def _log_run(p: PipelineParams, d: dict[str, Any], round_: int | None = None) -> None:
    import mlflow

    from amc.pipeline.lineage import stage_run

    with stage_run("promote", params=p.promote.model_dump(mode="json"),
                   inputs=[str(p.evaluate.out_dir)],
                   uri=p.mlflow_uri, tags={"promotion.decision": str(d["promote"]).lower()},
                   round_=round_, detail="promoted" if d["promote"] else "kept"):
        mlflow.log_metrics({k: float(d[k]) for k in ("delta", "se", "p_value", "lower_bound",
                                                     "oracle_delta", "oracle_se")
                            if isinstance(d.get(k), (int, float)) and math.isfinite(d[k])})
        mlflow.log_metric("promoted", float(d["promote"]))
        mlflow.log_dict(d, "promotion.json")
        mlflow.log_text(markdown(d), "promotion.md")


if __name__ == "__main__":  # the DVC stage's cmd
    stage_main(run)
