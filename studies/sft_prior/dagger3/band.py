"""The third DAgger round's evaluation: its declared checkpoint plays the plan-band cell with
seeds 0-3.

    python -m studies.sft_prior.dagger3.band --seed S [--keep-only]

1. the checkpoint is chosen by ``protocol.json``'s rule from the round's SFT run
   (``sft/out-dagger3``): the highest held-out greedy action accuracy on the prior's own states
   (ties: the later), and kept in git under ``sft/kept/textcraft-dagger3/step-NNNNNN``;
2. ``amc run`` plays the plan-band cell's declared design (``studies/sft_prior/band/
   protocol.json``: its tasks, horizon, arms, value and beta) with that adapter and this
   round's seeds 0-3, one declared seed per process, into ``runs/sft-dagger3-band/seedS``
   (resumable);
3. the finished seed files are gzipped into ``evidence/sft-prior/dagger3/band/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from studies.sft_prior.dagger2 import band as round2

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
STAGE = REPO / "sft/out-dagger3/checkpoints"
KEPT = REPO / "sft/kept/textcraft-dagger3"
RUNS = REPO / "runs/sft-dagger3-band"
EVIDENCE = REPO / "evidence/sft-prior/dagger3/band"
SEEDS = [0, 1, 2, 3]  # protocol.json "evaluation": the plan-band design with four seeds


def cell_protocol(adapter: Path) -> dict[str, Any]:
    """The plan-band protocol with ``adapter`` as the prior's and this round's seeds."""
    return round2.cell_protocol(adapter, SEEDS)


def main(argv: list[str] | None = None) -> int:
    return round2.main(argv, STAGE, KEPT, RUNS, EVIDENCE, SEEDS, __doc__ or "")


if __name__ == "__main__":
    raise SystemExit(main())
