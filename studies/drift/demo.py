"""Flow ``amc-drift-demo``: the prior changes in a way that hurts; the loop notices and recovers.

Offline and cheap: TextCraft (offline recipes) and the ``planner-mix`` prior, whose options
stand for "the model behind the API". In one directory holding its own ``params.yaml``
(:func:`chosen_params`; rounds on, a window of one round so a retrained head learns the prior
as it is now), it plays :data:`CHANGE`, the change a declared search chose because it hurts a
stale head (``studies/drift/feedback.py``):

1. prior A (grounds its plan on its own inventory listing): round 0
   (:func:`flows.retrain_and_promote.retrain_and_promote`) trains a head, the gate promotes it
   and records its AMC gain over Best-of-N on the frozen set (``baseline.gain``); check 0 on
   fresh rollouts of A measures the gain g0 (no drift);
2. the prior changes to B (derailed by the same listing; the demo rewrites ``prior.options``,
   as a provider silently updating its model would). A state the stale head learned to weigh
   up (a listing) now predicts failure, so the head steers the wrong way: check 1 measures
   its gain g1 and marks drift on what got worse (the gain fell by more than
   ``drift.max_gain_drop``, :func:`amc.pipeline.gate_stats.drift_check`), not on any movement;
3. the drift triggers retraining: round 1 collects fresh rollouts of B and trains; the gate
   decides (a drifted champion has lost its claim, but the challenger must be better
   calibrated and non-inferior; with ``promote.max_mde`` a tie, every difference 0, is no
   test and keeps the champion);
4. check 2 measures the gain g2 of whichever head is champion on B.

The story (``drift_demo.json``) has each check's gain with its paired interval (by task and
seed, t over tasks, exact sign-flip p), the fall g1 - g0 and the recovery g2 - g1 paired by
task across checks (each check has its own fresh seeds), and the gate's paired difference of
the retrained head vs the stale one on B (same tasks and seeds: g2 - g1 with Best-of-N
cancelled). The searches measured which changes hurt at this scale before the demo played one
(``evidence/drift/candidates-*.json``: a change of skill per subtask, :data:`SKILLS_A` and
:data:`SKILLS_B`, did not); ``studies/drift/demo_doc.py`` writes the docs' section from them
and, once one is committed, from a demo run (``evidence/drift/demo.json``).

Each check and decision is a Prefect artifact and MLflow tags (the stages' own); the demo adds
a plot of the champion's gain over Best-of-N (with interval), success and calibration per
check (``<report.plots_dir>/drift_demo.png``, data in ``drift_demo.json``) and a summary
artifact ``amc-drift-demo``. In the demo the triggered retraining runs as a subflow (no worker
needed); with the deployments served (``python -m flows.deploy``) the scheduled monitor starts
the deployment instead (:mod:`flows.drift`). Run it (Prefect server on 127.0.0.1, see
docs/pipeline.md)::

    python -m studies.drift.demo init demo/params.yaml && cd demo
    PYTHONPATH=.. python -m studies.drift.demo
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import yaml
from prefect import flow
from prefect.artifacts import create_markdown_artifact, create_table_artifact

from amc.plots import pyplot, save_png
from amc.results import write_json_atomic
from amc.stats import paired_difference
from flows._artifacts import image_markdown
from flows._common import params
from flows._log import say
from flows.drift import drift_flow
from flows.retrain_and_promote import retrain_and_promote

SKILLS_A: dict[str, float] = {"get": 0.9, "craft": 0.3}
"""Prior A's skill per subtask: fetches base items reliably, crafts poorly."""
SKILLS_B: dict[str, float] = {"get": 0.3, "craft": 0.9}
"""Prior B's (the new model version's): the reverse."""
CHANGE: dict[str, Any] = {
    "before": {"q": 0.5, "after": {"Inventory": 1.0}},
    "after": {"q": 0.5, "after": {"Inventory": 0.1}},
    "overrides": {"env": {"options": {"reward": "binary"}}},
}
"""The prior change the demo plays, the one ``studies/drift/feedback.py``'s declared rule chose
(``evidence/drift/candidates-feedback.json``): version A grounds its plan on its own inventory
listing (success after a listing is likely), version B is derailed by it; the heads learn the
success reward (``overrides`` of :func:`demo_params`), whose good states the change flips."""


def demo_params(scale: str = "measure") -> dict[str, Any]:
    """A params file of the demo: ``measure`` (the regime ``studies/drift/subtask.py``
    measured: depth 2-3 tasks, where Best-of-N fails often enough for AMC to gain; tens of
    minutes on one CPU core) or ``toy`` (the same story at a size that only shows the plumbing)."""
    if scale not in ("measure", "toy"):
        raise ValueError(f"scale is measure or toy, not {scale!r}")
    big = scale == "measure"
    return {
        "env": {"name": "textcraft",
                "options": {"reward": "dense", "min_depth": 2, "max_depth": 3}},
        "prior": {"name": "planner-mix", "options": {"q": 0.5, "skills": dict(SKILLS_A)}},
        # beta 0.05: at beta 1 the weights barely move (docs/evidence.md, gain vs beta: even
        # the rollout upper bound gains nothing there; this demo's head measured +0.000)
        "smc": {"max_steps": 6, "beta": 0.05, "resample": "fixed", "resample_steps": [2, 4],
                "success_threshold": 1.0},
        "collect": {"max_tasks": 64 if big else 4, "rollouts": 8 if big else 2, "seeds": [0]},
        "rounds": {"enabled": True, "window": 1},
        "train": {"epochs": 3 if big else 1, "max_length": 128 if big else 32,
                  "num_layers": 1},
        "evaluate": {"methods": ["bon", "amc"], "n_grid": [4], "seeds": [0, 1, 2] if big else [0],
                     "max_tasks": 48 if big else 4},
        # the gate on success (its paired difference is then the gain's, Best-of-N
        # cancelled); a tie (every difference 0) has no mde: no test, the champion stays
        "promote": {"calibration_states": 400 if big else 20, "metric": "success",
                    "max_mde": 0.2},
        "drift": {"rollouts": 8 if big else 2, "seeds_per_check": 3 if big else 1,
                  "calibration_states": 400 if big else 20},
        "report": {"calibration_states": 20},
    }


def chosen_params(scale: str = "measure") -> dict[str, Any]:
    """:func:`demo_params` with the chosen change's overrides, starting on its prior A."""
    data = merged(demo_params(scale), CHANGE["overrides"])
    data["prior"]["options"] = dict(CHANGE["before"])
    return data


def merged(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``over``'s leaves set (nested dicts merged, not replaced)."""
    return {**base, **{k: merged(base[k], v) if isinstance(v, dict)
                       and isinstance(base.get(k), dict) else v for k, v in over.items()}}


def set_prior(params_path: str, options: dict[str, Any]) -> None:
    """The prior changes: rewrite ``prior.options`` of the demo's params file."""
    path = Path(params_path)
    data = yaml.safe_load(path.read_text())
    data["prior"]["options"] = dict(options)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def row(phase: str, label: str, prior: dict[str, Any], check: dict[str, Any]) -> dict[str, Any]:
    """One point of the plot: the champion's numbers on fresh rollouts at one check (phase A:
    the head on its own prior, B: the stale head on the new prior, C: the retrained round's
    champion on it)."""
    now = check.get("now") or {}
    gi, base = now.get("gain_interval") or {}, check.get("baseline") or {}
    return {"phase": phase, "check": check["check"], "label": label, "prior": dict(prior),
            "version": check["version"], "round": check.get("round"), "drift": check["drift"],
            "reasons": list(check.get("reasons") or []), "seeds": list(check.get("seeds") or []),
            "gain": now.get("gain"), "gain_lo": gi.get("lo"), "gain_hi": gi.get("hi"),
            "gain_p": gi.get("p"), "gain_tasks": gi.get("tasks"), "gain_pairs": gi.get("pairs"),
            "gain_by_task": dict(now.get("gain_by_task") or {}),
            "baseline_gain": base.get("gain"),
            "baseline_calibration_bias": base.get("calibration_bias"),
            "baseline_calibration_mae": base.get("calibration_mae"),
            "success": now.get("success"), "calibration_mae": now.get("calibration_mae"),
            "calibration_bias": now.get("calibration_bias")}


def across(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any] | None:
    """The change of the gain from one check to a later one, paired by task (each check has
    its own fresh seeds, the same tasks): mean, t interval over tasks, exact sign-flip p."""
    a, b = before["gain_by_task"], after["gain_by_task"]
    if not set(a) & set(b):
        return None
    return dict(paired_difference({(t, 0): v for t, v in b.items()},
                                  {(t, 0): v for t, v in a.items()}).to_dict())


def story(rows: list[dict[str, Any]], decisions: list[dict[str, Any]]) -> dict[str, Any]:
    """The demo's claims: the fall (g1 - g0), the recovery (g2 - g1) and the gate's paired
    retrained-vs-stale difference on the new prior (None where a phase did not run)."""
    by = {r["phase"]: r for r in rows}
    fall = across(by["A"], by["B"]) if "A" in by and "B" in by else None
    rec = across(by["B"], by["C"]) if "B" in by and "C" in by else None
    return {"fall": fall, "recovery": rec,
            "gate": next((d for d in decisions if d["round"] == 1), None)}


def plot(rows: list[dict[str, Any]], out: Path) -> Path:
    """Champion gain (with interval), success and calibration per check (PNG; the flow writes
    the story next to it, ``drift_demo.json``)."""
    plt = pyplot()
    out.mkdir(parents=True, exist_ok=True)
    x = list(range(len(rows)))
    fig, (a0, a1, a2) = plt.subplots(1, 3, figsize=(14, 4))
    gain = [_f(r["gain"]) for r in rows]
    err = [[g - _f(r["gain_lo"]) for g, r in zip(gain, rows, strict=True)],
           [_f(r["gain_hi"]) - g for g, r in zip(gain, rows, strict=True)]]
    a0.errorbar(x, gain, yerr=err, marker="o", capsize=4)
    a0.axhline(0, color="grey", lw=0.5)
    a0.set(ylabel="AMC - Best-of-N success (95% t interval)")
    a1.plot(x, [r["success"] for r in rows], marker="o")
    a1.set(ylabel="champion success (SMC, fresh seeds)", ylim=(0, 1.05))
    a2.plot(x, [r["calibration_mae"] for r in rows], marker="o", label="MAE")
    a2.plot(x, [r["calibration_bias"] for r in rows], marker="s", label="bias")
    a2.axhline(0, color="grey", lw=0.5)
    a2.set(ylabel="predicted - realised future reward")
    a2.legend()
    for ax in (a0, a1, a2):
        ax.set_xticks(x, [f"{r['label']}\nv{r['version']}" for r in rows], fontsize=7)
        for i, r in enumerate(rows):
            if r["drift"]:
                ax.axvline(i, color="C3", alpha=0.3, lw=6)
    fig.suptitle("drift demo: champion per check (red = drift marked)")
    save_png(fig, out / "drift_demo.png")
    return out / "drift_demo.png"


def _f(x: Any) -> float:
    """A number for the plot (None: NaN, drawn as a gap)."""
    return math.nan if x is None else float(x)


def check_line(r: dict[str, Any]) -> str:
    """One check in the story: its gain over Best-of-N with interval, and the verdict."""
    gain = (f"gain {r['gain']:+.3f} [{_f(r['gain_lo']):+.3f}, {_f(r['gain_hi']):+.3f}], "
            f"p {_f(r['gain_p']):.3f}" if r.get("gain") is not None else "gain n/a")
    why = f" ({'; '.join(r['reasons'])})" if r["drift"] else ""
    return (f"- check {r['check']} ({r['label']}, v{r['version']}): {gain}; "
            f"drift={r['drift']}{why}")


@flow(name="amc-drift-demo", log_prints=False)
def drift_demo(params_path: str = "params.yaml", before: dict[str, Any] | None = None,
               after: dict[str, Any] | None = None) -> dict[str, Any]:
    """Round 0 on prior A; the prior changes to B, which hurts the stale head (drift); round 1
    retrains on B. Returns the story (prior options default to :data:`CHANGE`'s)."""
    before = before or dict(CHANGE["before"])
    after = after or dict(CHANGE["after"])
    set_prior(params_path, before)
    first = retrain_and_promote(params_path)
    rows = [row("A", "A: round 0", before, drift_flow(params_path, trigger_retraining=False))]
    set_prior(params_path, after)
    changed = drift_flow(params_path, trigger_retraining=False)
    rows.append(row("B", "B: prior changed", after, changed))
    second = None
    if changed["drift"]:  # the trigger (as a subflow: the demo needs no worker)
        second = retrain_and_promote(params_path)
        rows.append(row("C", "B: round 1", after,
                        drift_flow(params_path, trigger_retraining=False)))
    png = plot(rows, params(params_path).report.plots_dir)
    decisions = [decision(i, d) for i, d in enumerate(x for x in (first, second) if x)]
    out = {"checks": rows, "decisions": decisions, **story(rows, decisions), "plot": str(png)}
    write_json_atomic(png.with_suffix(".json"), out)
    create_table_artifact(key="amc-drift-demo", table=[
        {k: v for k, v in r.items() if k != "gain_by_task"} for r in rows],
        description="champion per drift check")
    create_markdown_artifact(key="amc-drift-demo-story", markdown="\n".join(
        ["# Drift demo", "", image_markdown(png, "champion's gain and calibration per check"),
         "", *story_lines(out)]))
    return out


def decision(i: int, d: dict[str, Any]) -> dict[str, Any]:
    """A round's gate decision, with its paired challenger - champion statistics."""
    keys = ("metric", "delta", "se", "p_value", "lower_bound", "n_tasks", "n_pairs", "mde",
            "tested", "champion_drifted", "min_effect", "decision_level")
    return {"round": i, "promoted": bool(d["promote"]), "reason": d["reason"],
            **{k: d.get(k) for k in keys}}


def story_lines(out: dict[str, Any]) -> list[str]:
    """The story as markdown bullets: decisions, checks, fall and recovery."""
    lines = [f"- round {d['round']}: {'PROMOTED' if d['promoted'] else 'kept'}: {d['reason']}"
             for d in out["decisions"]]
    lines += [check_line(r) for r in out["checks"]]
    for name in ("fall", "recovery"):
        if (x := out.get(name)) is not None:
            lines.append(f"- {name}: {x['mean']:+.3f} [{x['lo']:+.3f}, {x['hi']:+.3f}], "
                         f"p {x['p']:.3g} ({x['tasks']} tasks, paired by task)")
    return lines


def main(argv: list[str]) -> None:
    """``init <params.yaml> [measure|toy]`` writes the demo's params (:func:`chosen_params`,
    default ``measure``, the measured regime); no argument runs the demo here."""
    if argv[:1] == ["init"] and len(argv) in (2, 3):
        path = Path(argv[1])
        path.parent.mkdir(parents=True, exist_ok=True)
        scale = argv[2] if len(argv) == 3 else "measure"
        path.write_text(yaml.safe_dump(chosen_params(scale=scale), sort_keys=False))
        say(f"wrote {path}")
    elif not argv:
        out = drift_demo()
        say(yaml.safe_dump(out["checks"], sort_keys=False))
    else:
        raise SystemExit("usage: python -m studies.drift.demo [init PARAMS_PATH [measure|toy]]")


if __name__ == "__main__":
    main(sys.argv[1:])
