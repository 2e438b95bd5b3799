"""Flow ``amc-drift-demo``: the loop notices that the prior changed, retrains and recovers.

Offline and cheap: TextCraft (offline recipes) and the skill-controlled ``planner-mix`` prior,
whose skill q stands for "the model behind the API". In one directory holding its own
``params.yaml`` (:func:`demo_params`; rounds on, a window of one round so a retrained head
learns the prior as it is now):

1. prior A (q = ``q_before``): round 0 (:func:`flows.retrain_and_promote.retrain_and_promote`)
   trains a head, the gate promotes it; a drift check on fresh rollouts finds no drift;
2. the prior changes to B (q = ``q_mild``; the demo rewrites ``prior.options.q``, as a
   provider silently updating its model would): the head's calibration *improves* (its bias
   moves toward 0 by more than ``drift.max_bias_shift``) and nothing got worse: no drift,
   since drift is flagged on what got worse (:func:`amc.pipeline.gate_stats.drift_check`),
   not on any movement;
3. the prior changes to C (q = ``q_after``): the head's bias grows: the check marks drift;
4. the drift triggers retraining: round 1 collects fresh rollouts of C, trains, and the gate
   decides (a drifted champion has lost its claim, but the challenger must still be better
   calibrated than it);
5. a last check of whichever head is champion on C.

Each check records the champion's AMC gain over Best-of-N with its paired interval. At this
toy scale the gain does not move: ``scripts/drift_candidates.py`` measured that no declared
skill or action-style change makes a stale head's gain over Best-of-N fall measurably, nor a
retrained head's rise above it (``evidence/drift/candidates-*.json``; docs/pipeline.md), and
in this demo the retrained toy head (one round of 32 rollouts, 2 epochs) is not better
calibrated either, so the gate keeps the drifted champion and the last check still marks drift.

Each check and decision is a Prefect artifact and MLflow tags (the stages' own); the demo adds
a plot of the champion's gain over Best-of-N (with interval), success and calibration per
check (``<report.plots_dir>/drift_demo.png``, data in ``drift_demo.json``) and a summary
artifact ``amc-drift-demo``.
In the demo the triggered retraining runs as a subflow (no worker needed); with the
deployments served (``python -m flows.deploy``) the scheduled monitor starts the deployment
instead (:mod:`flows.drift`). Run it (Prefect server on 127.0.0.1, see docs/pipeline.md)::

    python -m flows.drift_demo init demo/params.yaml && cd demo
    PYTHONPATH=.. python -m flows.drift_demo
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
from flows._artifacts import image_markdown
from flows._common import params
from flows._log import say
from flows.drift import drift_flow
from flows.retrain_and_promote import retrain_and_promote

SKILLS_A: dict[str, float] = {"get": 0.9, "craft": 0.3}
"""Prior A's skill per subtask: fetches base items reliably, crafts poorly."""
SKILLS_B: dict[str, float] = {"get": 0.3, "craft": 0.9}
"""Prior B's (the new model version's): the reverse."""


def demo_params(q: float = 0.4, scale: str = "toy") -> dict[str, Any]:
    """A params file of the demo: ``toy`` (minutes on a laptop CPU; prior skill ``q``) or
    ``measure`` (the regime of ``scripts/drift_subtask.py``: depth 2-3 tasks, where Best-of-N
    fails often enough for AMC to gain, prior A's per-subtask skills)."""
    if scale == "measure":
        return {
            "env": {"name": "textcraft",
                    "options": {"reward": "dense", "min_depth": 2, "max_depth": 3}},
            "prior": {"name": "planner-mix", "options": {"q": 0.5, "skills": dict(SKILLS_A)}},
            "smc": {"max_steps": 6, "beta": 1.0, "resample": "fixed", "resample_steps": [2, 4],
                    "success_threshold": 1.0},
            "collect": {"max_tasks": 64, "rollouts": 8, "seeds": [0]},
            "rounds": {"enabled": True, "window": 1},
            "train": {"epochs": 3, "max_length": 128, "num_layers": 1},
            "evaluate": {"methods": ["bon", "amc"], "n_grid": [4], "seeds": [0, 1, 2],
                         "max_tasks": 48},
            "promote": {"calibration_states": 400},
            "drift": {"rollouts": 8, "seeds_per_check": 3, "calibration_states": 400},
            "report": {"calibration_states": 20},
        }
    if scale != "toy":
        raise ValueError(f"scale is toy or measure, not {scale!r}")
    return {
        "env": {"name": "textcraft", "options": {"reward": "dense", "max_depth": 2}},
        "prior": {"name": "planner-mix", "options": {"q": q}},
        "smc": {"max_steps": 6, "beta": 1.0, "resample": "fixed", "resample_steps": [2],
                "success_threshold": 1.0},
        "collect": {"max_tasks": 8, "rollouts": 4, "seeds": [0]},
        "rounds": {"enabled": True, "window": 1},
        "train": {"epochs": 2, "max_length": 64, "num_layers": 1},
        "evaluate": {"methods": ["bon", "amc"], "n_grid": [2, 4], "seeds": [0, 1, 2],
                     "max_tasks": 8},
        "promote": {"calibration_states": 400},
        "drift": {"rollouts": 8, "seeds_per_check": 2, "calibration_states": 400},
        "report": {"calibration_states": 20},
    }


def set_q(params_path: str, q: float) -> None:
    """The prior changes: rewrite ``prior.options.q`` of the demo's params file."""
    path = Path(params_path)
    data = yaml.safe_load(path.read_text())
    data["prior"]["options"]["q"] = q
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def row(label: str, q: float, check: dict[str, Any]) -> dict[str, Any]:
    """One point of the plot: the champion's numbers on fresh rollouts at one check."""
    now = check.get("now") or {}
    gi, base = now.get("gain_interval") or {}, check.get("baseline") or {}
    return {"check": check["check"], "label": label, "q": q, "version": check["version"],
            "round": check.get("round"), "drift": check["drift"],
            "reasons": list(check.get("reasons") or []),
            "gain": now.get("gain"), "gain_lo": gi.get("lo"), "gain_hi": gi.get("hi"),
            "gain_p": gi.get("p"), "baseline_gain": base.get("gain"),
            "baseline_calibration_bias": base.get("calibration_bias"),
            "baseline_calibration_mae": base.get("calibration_mae"),
            "success": now.get("success"), "calibration_mae": now.get("calibration_mae"),
            "calibration_bias": now.get("calibration_bias")}


def plot(rows: list[dict[str, Any]], out: Path) -> Path:
    """Champion gain (with interval), success and calibration per check (PNG), the data next to
    it (JSON)."""
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
    write_json_atomic(out / "drift_demo.json", rows)
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
def drift_demo(params_path: str = "params.yaml", q_before: float = 0.4,
               q_mild: float | None = 0.2, q_after: float = 0.8) -> dict[str, Any]:
    """Round 0 on prior A; a change that hurts nothing (no drift); a change that does (drift);
    round 1 recovers. Returns the story."""
    set_q(params_path, q_before)
    first = retrain_and_promote(params_path)
    rows = [row("A: round 0", q_before, drift_flow(params_path, trigger_retraining=False))]
    if q_mild is not None:  # the head predicts this prior no worse: not drift
        set_q(params_path, q_mild)
        rows.append(row("B: prior changed", q_mild,
                        drift_flow(params_path, trigger_retraining=False)))
    set_q(params_path, q_after)
    changed = drift_flow(params_path, trigger_retraining=False)
    rows.append(row("C: prior changed", q_after, changed))
    second = None
    if changed["drift"]:  # the trigger (as a subflow: the demo needs no worker)
        second = retrain_and_promote(params_path)
        rows.append(row("C: round 1", q_after, drift_flow(params_path,
                                                          trigger_retraining=False)))
    png = plot(rows, params(params_path).report.plots_dir)
    decisions = [{"round": i, "promoted": d["promote"], "reason": d["reason"]}
                 for i, d in enumerate(x for x in (first, second) if x is not None)]
    create_table_artifact(key="amc-drift-demo", table=rows,
                          description="champion per drift check")
    create_markdown_artifact(key="amc-drift-demo-story", markdown="\n".join(
        ["# Drift demo", "", image_markdown(png, "champion's gain and calibration per check"),
         ""]
        + [f"- round {d['round']}: {'PROMOTED' if d['promoted'] else 'kept'}: {d['reason']}"
           for d in decisions]
        + [check_line(r) for r in rows]))
    return {"checks": rows, "decisions": decisions, "plot": str(png)}


def main(argv: list[str]) -> None:
    """``init <params.yaml>`` writes the demo's params; no argument runs the demo here."""
    if argv[:1] == ["init"] and len(argv) == 2:
        path = Path(argv[1])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(demo_params(), sort_keys=False))
        say(f"wrote {path}")
    elif not argv:
        out = drift_demo()
        say(yaml.safe_dump(out["checks"], sort_keys=False))
    else:
        raise SystemExit("usage: python -m flows.drift_demo [init PARAMS_PATH]")


if __name__ == "__main__":
    main(sys.argv[1:])
