"""One whole round in one process: the explicit table of the DVC stages, run in order.

Every stage module (``collect``, ``dataset``, ``train``, ``evaluate``, ``promote``, ``report``)
has one entry ``run(params)``; :data:`STAGES` lists them once, in the order of ``dvc.yaml``.
:func:`run_round` opens (or resumes) the round (:mod:`amc.pipeline.rounds`), runs the stages and
records each one's outputs with ``dvc commit -f <stage>`` (:func:`amc.pipeline.lineage.dvc_commit`,
under the DVC lock) so ``dvc.lock`` holds every round's dataset hash when training reads it.
This module sits above the stages; no stage imports it.

``python -m amc.pipeline.round [params.yaml] [--stages a,b] [--json]``: one round (what the
scheduled flow does), printing one line per stage as it finishes -- its time and what it made
(:func:`describe`: rollouts, dataset rows, model version, evaluation, the gate's decision, the
summary file) -- and one line for the round; ``--json`` adds the round's ledger record.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from amc.pipeline import collect, dataset, evaluate, promote, report, rounds, train
from amc.pipeline.lineage import dvc_commit
from amc.pipeline.params import OVERRIDES_ROOT, PARAMS_FILE, PipelineParams

STAGES: Mapping[str, Callable[[PipelineParams], Any]] = {
    "collect": lambda p: collect.run(p, progress=True), "dataset": dataset.run,
    "train": train.run, "evaluate": lambda p: evaluate.run(p, progress=True),
    "promote": promote.run, "report": report.run,
}
"""Stage name -> its ``run``, in pipeline order."""


def run_round(p: PipelineParams, stages: Sequence[str] = tuple(STAGES), *,
              record: bool = True, say: Callable[[str], None] | None = None) -> dict[str, Any]:
    """One round in this process: open (or resume) it, run ``stages``; the round's record.

    Each stage's ``run`` is followed by ``dvc commit -f <stage>`` (``record``; only for
    ``params.yaml`` runs in a DVC project). The promote stage closes the round. ``say`` gets
    one line per finished stage and one for the round (:func:`describe`, :func:`round_line`).
    """
    unknown = [s for s in stages if s not in STAGES]
    if unknown:
        raise ValueError(f"unknown stages {unknown}; choose from {list(STAGES)}")
    r = int(rounds.open_round(p)["round"])
    for stage in stages:
        started = time.monotonic()
        out = STAGES[stage](p)
        if record and not p.collect.out_dir.is_relative_to(OVERRIDES_ROOT):
            dvc_commit(stage)
        if say is not None:
            step = rounds.load_round(p, r)["steps"].get(stage)
            say(f"round {r} · {stage}: {describe(stage, out, step, p)} "
                f"({time.monotonic() - started:.1f} s)")
    rec = rounds.load_round(p, r)
    if say is not None:
        say(round_line(rec))
    return rec


def describe(stage: str, out: Any, step: Mapping[str, Any] | None, p: PipelineParams) -> str:
    """What ``stage`` made, in a few words, from its ledger step (``step``) or its return."""
    step = step or {}
    res = out if isinstance(out, Mapping) else {}
    if stage == "collect" and step:
        return (f"{step.get('tasks')} tasks, seeds {step.get('seeds')}: {step.get('records')} "
                f"records, {step.get('rollouts')} rollouts in {step.get('dir')}")
    if stage == "dataset" and step:
        rows = step.get("rows") or {}
        split_rows = ", ".join(f"{k} {v}" for k, v in rows.items())
        return (f"{sum(rows.values())} rows ({split_rows}) from rounds {step.get('rounds')}, "
                f"content {str(step.get('content_hash'))[:12]}")
    if stage == "train" and step:
        return f"{step.get('model')} version {step.get('version')}"
    if stage == "evaluate" and res:
        return (f"{res.get('status')}: {res.get('n_tasks')} tasks x "
                f"{len(res.get('seeds') or ())} seeds, {', '.join(res.get('methods') or ())}")
    if stage == "promote" and res:
        return f"{'promoted' if res.get('promote') else 'kept'}: {res.get('reason')}"
    if stage == "report":
        return f"summary in {p.report.summary_file}"
    return "done"


def round_line(rec: Mapping[str, Any]) -> str:
    """The round's status and the gate's decision, one line."""
    gate = (rec.get("steps") or {}).get("promote")
    decision = "" if gate is None else (
        f": {'promoted' if gate.get('promote') else 'kept'} {gate.get('model')} "
        f"v{gate.get('challenger_version')}")
    return f"round {rec['round']} {rec['status']}{decision} (seeds {rec.get('seeds')})"


def _args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="python -m amc.pipeline.round",
        description="One round of the AMC pipeline in this process: the stages "
        f"{' -> '.join(STAGES)}, each followed by `dvc commit -f <stage>` (in a DVC project); "
        "rounds.enabled must be true. Prints one line per finished stage and one for the "
        "round.")
    ap.add_argument("params", nargs="?", default=str(PARAMS_FILE),
                    help=f"the pipeline's params file (default: {PARAMS_FILE})")
    ap.add_argument("--stages", default=",".join(STAGES),
                    help="comma-separated stages to run, in the order given (default: all)")
    ap.add_argument("--json", action="store_true",
                    help="print the round's ledger record as JSON at the end")
    args = ap.parse_args(argv)
    args.stages = [s.strip() for s in args.stages.split(",") if s.strip()]
    unknown = [s for s in args.stages if s not in STAGES]
    if unknown or not args.stages:
        ap.error(f"--stages: unknown {unknown or 'empty'}; choose from {', '.join(STAGES)}")
    return args


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m amc.pipeline.round [params.yaml] [--stages a,b] [--json]``: one round."""
    from amc.pipeline.params import stage_main

    args = _args(argv)

    def one_round(p: PipelineParams) -> None:
        rec = run_round(p, args.stages, say=lambda line: print(line, flush=True))
        if args.json:
            print(json.dumps(rec, indent=2))

    stage_main(one_round, [args.params])


if __name__ == "__main__":
    main()
