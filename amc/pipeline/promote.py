"""Stage ``promote``: the promotion gate, challenger vs champion on a frozen evaluation set.

Both models run the *same* evaluation (``<evaluate.out_dir>/evaluation.json`` and its results:
same tasks, N and seeds). The first gated evaluation freezes its (tasks, seeds) into
``promote.frozen_set``; an evaluation on any other set is refused, so every decision of a model's
history is measured on the same ground. With the paired differences d = challenger - champion of
``promote.metric`` over every (task, seed) at N = ``promote.n`` (default: the largest N),
averaged within each task, the challenger is promoted when the one-sided sign-flip test over
tasks of ``E[d] > promote.min_effect`` passes (:func:`amc.pipeline.gate_stats.gate_test`) at
the decision's level -- ``promote.level``, spent over the frozen set's decisions with
``promote.reuse = spend`` (the set's file counts tested decisions) -- and no guard vetoes it:
tokens per task (``promote.max_token_increase``), the value's calibration error on the
evaluation's prior rollouts (``promote.max_calibration_increase``) and, when
``promote.offline_guard`` is set, an offline figure of the value on those held-out states (all
measured by :mod:`amc.pipeline.guards`, which also keeps the frozen set). With no champion yet
the challenger is promoted.
A champion that the drift monitor marked (tag ``drift.status = drift``) only needs to be
matched: a better calibrated challenger not worse than ``promote.drift_margin`` replaces it.
With ``promote.max_mde`` set, a gate without the power to detect that effect runs no test
(:func:`amc.pipeline.gate_stats.untested_reason`): it keeps the champion and its reason says
it "decided without a test", why, and how many tasks would do (``tested: false``).

It never promotes a model whose evaluation failed or is incomplete, nor one whose evaluation is
stale (the challenger or champion alias moved since the evaluation resolved them). The decision
goes to ``metrics/promotion.json``, a few tags of the challenger's version (``promotion.*``:
verdict, reason, test, offline guard; a promoted one also ``baseline.<q>`` and ``_se`` for the
drift monitor: calibration, success, gain over ``bon@N``), a line of its description (the
evidence) and an MLflow run (experiment ``amc-promote``) with the decision as an artifact.
"""

from __future__ import annotations

import math
import time
from typing import Any

from amc.pipeline.artifacts import (
    load_plan,
    load_record,
    load_results,
    promotion_headline,
    resolve_alias,
)
from amc.pipeline.gate_stats import (
    GateTest,
    gate_test,
    guard_vetoes,
    reuse_level,
    sign_flip_min_tasks,
    task_differences,
    untested_reason,
)
from amc.pipeline.guards import (
    check_frozen,
    count_decision,
    eval_set,
    frozen_decisions,
    measure_guards,
    offline_check,
)
from amc.pipeline.lineage import annotate_version
from amc.pipeline.params import PipelineParams, stage_main
from amc.pipeline.promote_params import PromoteParams
from amc.pipeline.rounds import active_round, finish_round
from amc.results import TIMING, write_json_atomic
from amc.smc.records import TaskResult
from amc.stats import mean_se, tasks_for_power


def _paired(results: dict[str, list[Any]], a: str, b: str, seeds: list[int], metric: str
            ) -> list[tuple[str, float]]:
    """(task, a - b) of every (task, seed) both ran."""
    diffs = []
    for s in seeds:
        rb = {r.task_id: r for r in results.get(f"{b}#{s}", [])}
        for r in results.get(f"{a}#{s}", []):
            if r.task_id in rb:
                diffs.append((str(r.task_id),
                              float(r.metrics[metric]) - float(rb[r.task_id].metrics[metric])))
    return diffs


def decide(p: PipelineParams, eval_json: dict[str, Any], results: dict[str, list[Any]],
           current: dict[str, str | None], guards: dict[str, dict[str, Any]] | None = None,
           set_refusal: str | None = None, champion_drifted: bool = False,
           decisions_before: int = 0) -> dict[str, Any]:
    """The promotion decision (pure: no registry writes). ``current`` = aliases now;
    ``guards`` = per role (challenger/champion) tokens_per_task, calibration_mae and (offline
    guard on) ``offline`` figures with an ``offline_note``;
    ``set_refusal`` = why the evaluation set is not the frozen one (None: it is);
    ``champion_drifted`` = the drift monitor marked the champion (see :func:`_test_and_guard`);
    ``decisions_before`` = tested decisions already made on the frozen set (reuse rule)."""
    g = p.promote
    models = eval_json.get("models") or {}
    chal, champ = models.get("challenger"), models.get("champion")
    n = g.n or max(eval_json.get("n_grid") or [0])
    d: dict[str, Any] = {
        "promote": False, "metric": g.metric, "n": n, "model": models.get("name"),
        "challenger_version": chal and chal.get("version"),
        "champion_version": champ and champ.get("version"),
        "eval_status": eval_json.get("status"), "level": g.level, "min_effect": g.min_effect,
        "decision_number": decisions_before + 1, "reuse": g.reuse,
        "decision_level": reuse_level(g.level, decisions_before + 1) if g.reuse == "spend"
        else g.level,
        "delta": None, "se": None, "p_value": None, "t_p_value": None, "exact": None,
        "lower_bound": None, "mde": None, "power": g.power, "target_mde": g.target_mde,
        "tasks_needed": None, "n_tasks": 0, "max_mde": g.max_mde, "tested": False,
        "powered": None,
        "oracle_delta": None, "oracle_se": None, "n_pairs": 0,
        "challenger_mean": None, "champion_mean": None, "guards": guards or {}, "vetoes": [],
        "champion_drifted": champion_drifted,
        "offline_guard": {"status": "off" if g.offline_guard is None else "not reached"},
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
    oracle = task_differences(_paired(results, a, b, seeds, "oracle_best"))
    d["oracle_delta"], d["oracle_se"] = mean_se(list(oracle.values()))
    per_task = task_differences(diffs)
    level = float(d["decision_level"])
    t = gate_test(list(per_task.values()), min_effect=g.min_effect, level=level, power=g.power)
    d.update(delta=t.mean, se=t.se, mde=t.mde, n_pairs=len(diffs), n_tasks=t.tasks)
    small = _size_note(g, d, t)
    if (why := untested_reason(t, max_mde=g.max_mde)) is not None:
        return _untested(g, d, why, champ_now)
    d.update(p_value=t.p_value, t_p_value=t.t_p_value, exact=t.exact,
             lower_bound=t.lower_bound, tested=True,
             powered=None if g.max_mde is None else True)
    where = (f"{t.tasks} tasks, {len(diffs)} pairs, decision {d['decision_number']} on this "
             f"set at level {level:.3g}, mde {t.mde:.3g}")
    if not t.passes:
        return {**d, "reason": (
            f"{g.metric} change {t.mean:+.4f} (s.e. {t.se:.4f}; {where}) is not above "
            f"{g.min_effect:g} (sign-flip p={t.p_value:.3g}){small}: keep v{champ_now}")}
    guards = d["guards"]
    mine, theirs = guards.get("challenger", {}), guards.get("champion", {})
    d["vetoes"] = guard_vetoes(mine, theirs, max_token_increase=g.max_token_increase,
                               max_calibration_increase=g.max_calibration_increase)
    off = offline_check(g.offline_guard, mine.get("offline"), theirs.get("offline"),
                        mine.get("offline_note") or theirs.get("offline_note") or "")
    d["offline_guard"] = {k: v for k, v in off.items() if k != "veto"}
    d["vetoes"] += [off["veto"]] if off["veto"] else []
    if d["vetoes"]:
        return {**d, "reason": f"vetoed by guard: {'; '.join(d['vetoes'])}: keep v{champ_now}"}
    note = f"; {off['note']} (not applied)" if off.get("note") else ""
    return {**d, "promote": True, "reason": (
        f"{g.metric} +{t.mean:.4f} > {g.min_effect:g} (sign-flip p={t.p_value:.3g}, t lower "
        f"bound {t.lower_bound:+.4f}; {where}){small}{note}")}


def _effect(g: PromoteParams) -> float | None:
    """The per-task effect the frozen set is sized for: target_mde, else max_mde."""
    return g.target_mde if g.target_mde is not None else g.max_mde


def _size_note(g: PromoteParams, d: dict[str, Any], t: GateTest) -> str:
    """Record the tasks that detect :func:`_effect` at the observed sd (``tasks_needed``);
    the note a decision on fewer tasks carries (empty when enough or not computable)."""
    effect, level = _effect(g), float(d["decision_level"])
    sd = t.se * math.sqrt(t.tasks) if t.tasks > 1 else math.nan
    if effect is not None and sd > 0:
        d["tasks_needed"] = max(sign_flip_min_tasks(level), tasks_for_power(
            effect, sd, level=level, power=g.power, alternative="greater"))
    if d["tasks_needed"] is None or t.tasks >= d["tasks_needed"]:
        return ""
    return (f"; the frozen set's {t.tasks} tasks are fewer than the {d['tasks_needed']} that "
            f"detect {effect:g} with {g.power:.0%} power")


def _untested(g: PromoteParams, d: dict[str, Any], why: str, champ_now: str | None
              ) -> dict[str, Any]:
    """The decision of a gate that refused to test (no p-value: the level is not spent)."""
    need = (f"{d['tasks_needed']} tasks would detect {_effect(g):g} with {g.power:.0%} power"
            if d["tasks_needed"] is not None else "the tasks needed are unknown without a sd")
    return {**d, "powered": False, "reason": (
        f"decided without a test: {why}; {need} ({d['n_pairs']} pairs, mean change "
        f"{d['delta']:+.4f}): keep v{champ_now}")}


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
         "n", "level", "decision_number", "decision_level", "min_effect", "tested", "powered",
         "challenger_mean", "champion_mean", "delta", "se", "p_value", "t_p_value", "exact",
         "lower_bound", "mde", "max_mde", "tasks_needed", "oracle_delta", "oracle_se", "n_tasks",
         "n_pairs")


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
    og = d.get("offline_guard") or {}
    if og.get("figure"):
        lines += ["", "| offline guard | challenger | champion | worse by | max worse | status |",
                  "|---|---|---|---|---|---|",
                  f"| {og['figure']} | {_fmt(og.get('challenger'))} | "
                  f"{_fmt(og.get('champion'))} | {_fmt(og.get('worse_by'))} | "
                  f"{_fmt(og.get('max_worse'))} | {og.get('status')} |"]
        if og.get("note"):
            lines.append(f"\n{og['note']}")
    elif og:
        lines += ["", f"Offline guard: {og.get('status')}"]
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
               champion_drifted=drifted(name, current.get("champion")),
               decisions_before=frozen_decisions(p.promote.frozen_set))
    if d["tested"]:  # a tested decision spends the frozen set's level
        count_decision(p.promote.frozen_set)
    d["eval_set"] = es and es["digest"]
    d["decided_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    client = mlflow.MlflowClient() if name else None
    if d["promote"] and client is not None and name:
        client.set_registered_model_alias(name, p.promote.alias, d["challenger_version"])
    if client is not None and name and d["challenger_version"]:
        for k, v in evidence_tags(d).items():
            client.set_model_version_tag(name, d["challenger_version"], k, v)
        annotate_version(name, d["challenger_version"], evidence_line(d))
    d["champion_after"] = current_aliases(p, name)["champion"] if name else None
    write_json_atomic(p.promote.out_file, {k: v for k, v in d.items() if k != "decided_at"})
    write_json_atomic(p.promote.out_file.parent / TIMING / p.promote.out_file.name,  # the run's
                      {"decided_at": d["decided_at"]})  # record: outside the decision's bytes
    write_json_atomic(p.promote.metrics_file, promotion_headline(d))  # the rest: out_file
    r = active_round(p)
    if track:
        _log_run(p, d, r)
    finish_round(p, d)  # with rounds: the decision closes the round
    return d


def evidence_tags(d: dict[str, Any]) -> dict[str, str]:
    """A decision's few model-version tags (the verdict, its test, the offline guard); a
    promoted version also gets its drift baseline. The rest of the evidence is in the
    version's description (:func:`evidence_line`), decision.json and the amc-promote run."""
    tags = {"promotion.decision": "promoted" if d["promote"] else "kept",
            "promotion.reason": d["reason"][:500], "promotion.offline_guard": str(
                (d.get("offline_guard") or {}).get("status")),
            **{f"promotion.{k}": str(d.get(k)) for k in ("tested", "powered", "delta", "p_value")}}
    if d["promote"]:  # the challenger's guard measurements: what drift checks compare with
        mine = (d.get("guards") or {}).get("challenger") or {}
        tags.update({f"baseline.{k}": str(mine.get(k)) for k in (
            "tokens_per_task", "calibration_mae", "calibration_bias", "success", "gain",
            "calibration_mae_se", "calibration_bias_se", "success_se", "gain_se")})
    return tags


def evidence_line(d: dict[str, Any]) -> str:
    """The gate's verdict and evidence in one line of the version's description."""
    keys = ("metric", "n", "delta", "se", "p_value", "level", "decision_level", "mde",
            "n_tasks", "n_pairs", "champion_version", "eval_set")
    return (f"Gate {d['decided_at']}: {'promoted' if d['promote'] else 'kept'}, {d['reason']} ("
            + ", ".join(f"{k} {d.get(k)}" for k in keys) + f"; vetoes {d.get('vetoes')})")




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
        mlflow.log_metrics({k: float(d[k]) for k in ("delta", "se", "p_value", "t_p_value",
                                                     "lower_bound", "mde", "decision_level",
                                                     "oracle_delta", "oracle_se")
                            if isinstance(d.get(k), (int, float)) and math.isfinite(d[k])})
        mlflow.log_metric("promoted", float(d["promote"]))
        mlflow.log_metric("tested", float(bool(d.get("tested"))))
        mlflow.log_dict(d, "promotion.json")
        mlflow.log_text(markdown(d), "promotion.md")


def line(d: dict[str, Any]) -> str:
    """The stage's one-line result on the console: the decision and why."""
    champ = d.get("champion_after")
    verdict = (f"PROMOTED v{d['challenger_version']} to champion" if d["promote"]
               else f"kept champion v{champ}" if champ else "no champion (nothing promoted)")
    return f"promote: {verdict}: {d['reason']}"


if __name__ == "__main__":  # the DVC stage's cmd
    stage_main(lambda p: print(line(run(p)), flush=True))
