"""The sweep's value stage (``dvc repro value``) at 20,000 training states: wall and CPU per phase.

Runs :func:`studies.sweeps.value.run` -- the stage's own code, the committed ``sweeps/params.yaml``
(the value section issue 30's protocol chose: Bernoulli head, isotonic calibration, 4 extra
rollouts per visited state) -- in a temporary work directory, with the prior's rollouts per
train task raised until the training split holds at least ``--train-states`` states (the
params' 28 give ~14,800 once the 116 validation tasks are set aside). Phases: prior rollouts,
dataset (rendering), targets (the extra rollouts), curve (nested sizes; embeds every distinct
state of all splits once into the shared feature cache), final model, calibration, the
Monte-Carlo ceiling on the held-out states, offline figures. MLflow tracking is off (the stage
logs one small run per size). CPU seconds count this process's threads only; the load average
at start and end says how quiet the cores were. Writes ``docs/benchmarks.md``'s
``value-stage`` section and ``docs/value-stage/timing.json`` (every figure, per phase).

    nice -n 5 python benchmarks/bench_value_stage.py
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._report import md_table, write_section

REPO = Path(__file__).resolve().parent.parent
GOAL_S = 600.0  # issue 30 item 6: <= 10 min on 2 quiet cores
PHASES = ("rollouts", "smc_states", "dataset", "targets", "curve", "final", "calibration",
          "ceiling", "offline")
"""The stage's phases in the order it runs them (:func:`studies.sweeps.value.run`)."""
BASE_TRAIN_STATES = 14783  # the params' 28 rollouts (evidence/values/534748c2...json)


def measure(train_states: int) -> dict[str, Any]:
    from studies.sweeps.config import load_sweep_params
    from studies.sweeps.value import run

    params = load_sweep_params(REPO / "sweeps" / "params.yaml")
    vp, cell = params.value, params.cell
    rollouts = math.ceil(vp.rollouts * train_states / BASE_TRAIN_STATES)
    clock: dict[str, dict[str, float]] = {}
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        vp = vp.model_copy(update={"rollouts": rollouts, "work_dir": f"{tmp}/work",
                                   "out_dir": f"{tmp}/model",
                                   "quality_file": f"{tmp}/quality.json"})
        wall, cpu = time.perf_counter(), time.process_time()
        rec = run(vp, cell, track=False, progress=True, clock=clock)
        total = {"wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu}
    return {"rollouts": rollouts, "splits": rec["data"]["splits"], "phases": clock,
            "total": total, "final": rec["final"], "load_start": load0,
            "load_end": os.getloadavg(),
            "value": {k: rec["params"][k] for k in ("loss", "calibration", "state_rollouts",
                                                     "targets", "epochs", "max_length")}}


def report(m: dict[str, Any]) -> str:
    sp, tot = m["splits"], m["total"]
    ph = m["phases"]
    rows = [[k, f"{ph[k]['wall_s']:.0f}", f"{ph[k]['cpu_s']:.0f}",
             f"{100 * ph[k]['wall_s'] / tot['wall_s']:.0f}%"] for k in PHASES if k in ph]
    rows.append(["**whole stage**", f"**{tot['wall_s']:.0f}**", f"{tot['cpu_s']:.0f}", "100%"])
    verdict = "met" if tot["wall_s"] <= GOAL_S else "missed"
    v = m["value"]
    return "\n".join([
        "`python benchmarks/bench_value_stage.py` -- the sweep's `value` stage "
        "(`studies.sweeps.value.run`, sweeps/params.yaml's value section: "
        f"loss `{v['loss']}`, calibration `{v['calibration']}`, {v['state_rollouts']} extra "
        f"rollouts per visited state, targets `{v['targets']}`, head mode, MiniLM-L6 float, "
        f"max_length {v['max_length']}, up to {v['epochs']} epochs) with {m['rollouts']} prior "
        "rollouts per train task so the training split reaches the size; MLflow off; every "
        "figure in `docs/value-stage/timing.json`.", "",
        f"States: {sp['train']['rows']} train ({sp['train']['tasks']} tasks), "
        f"{sp['validation']['rows']} validation, {sp['test']['rows']} test (value-held-out); "
        f"final model test AUC {m['final']['test_auc']:.3f}.", "",
        md_table(["phase", "wall s", "CPU s", "share of wall"], rows), "",
        f"Goal: the stage at >= 20,000 training states in <= 10 min on 2 quiet cores: "
        f"**{verdict}** ({tot['wall_s'] / 60:.1f} min wall). Load average (1, 5, 15 min) "
        f"at the start {', '.join(f'{x:.2f}' for x in m['load_start'])}; at the end "
        f"{', '.join(f'{x:.2f}' for x in m['load_end'])}."])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--train-states", type=int, default=20000)
    ap.add_argument("--no-write", action="store_true", help="print only")
    args = ap.parse_args(argv)
    m = measure(args.train_states)
    body = report(m)
    print(body)
    if not args.no_write:
        out = REPO / "docs" / "value-stage" / "timing.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(m, indent=1, sort_keys=True) + "\n")
        write_section("value-stage", "The sweep's value stage at 20,000 training states (CPU)",
                      body)


if __name__ == "__main__":
    main()
