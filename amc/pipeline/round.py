"""One whole round in one process: the explicit table of the DVC stages, run in order.

Every stage module (``collect``, ``dataset``, ``train``, ``evaluate``, ``promote``, ``report``)
has one entry ``run(params)``; :data:`STAGES` lists them once, in the order of ``dvc.yaml``.
:func:`run_round` opens (or resumes) the round (:mod:`amc.pipeline.rounds`), runs the stages and
records each one's outputs with ``dvc commit -f <stage>`` (:func:`amc.pipeline.dvc.dvc_commit`,
under the DVC lock) so ``dvc.lock`` holds every round's dataset hash when training reads it.
This module sits above the stages; no stage imports it.

``python -m amc.pipeline.round [params.yaml]``: one round (what the scheduled flow does).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from amc.pipeline import collect, dataset, evaluate, promote, report, rounds, train
from amc.pipeline.dvc import dvc_commit
from amc.pipeline.params import OVERRIDES_ROOT, PipelineParams

STAGES: Mapping[str, Callable[[PipelineParams], Any]] = {
    "collect": collect.run, "dataset": dataset.run, "train": train.run,
    "evaluate": evaluate.run, "promote": promote.run, "report": report.run,
}
"""Stage name -> its ``run``, in pipeline order."""


def run_round(p: PipelineParams, stages: Sequence[str] = tuple(STAGES), *,
              record: bool = True) -> dict[str, Any]:
    """One round in this process: open (or resume) it, run ``stages``; the round's record.

    Each stage's ``run`` is followed by ``dvc commit -f <stage>`` (``record``; only for
    ``params.yaml`` runs in a DVC project). The promote stage closes the round.
    """
    unknown = [s for s in stages if s not in STAGES]
    if unknown:
        raise ValueError(f"unknown stages {unknown}; choose from {list(STAGES)}")
    r = int(rounds.open_round(p)["round"])
    for stage in stages:
        STAGES[stage](p)
        if record and not p.collect.out_dir.is_relative_to(OVERRIDES_ROOT):
            dvc_commit(stage)
    return rounds.load_round(p, r)


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m amc.pipeline.round [params.yaml]``: run one whole round."""
    from amc.pipeline.params import stage_main

    stage_main(lambda p: print(json.dumps(run_round(p), indent=2)), argv)


if __name__ == "__main__":
    main()
