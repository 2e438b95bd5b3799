"""Play the declared late-resampling cell (``protocol.json``), one seed per process, and keep it.

    python -m studies.sft_prior.late.run --seed S [--keep-only]

``amc run`` plays the SMC arm only (the progress value, resampling after steps 4-11) in the
round-3 plan-band design (its checkpoint, 24 tasks, seeds 0-3, H 12, N 4, beta 0.1) into
``runs/sft-late/seedS`` (resumable); Best-of-4 is the round-3 cell's kept arm
(``studies/sft_prior/smc_only.py``). The finished seed files are gzipped into
``evidence/sft-prior/late/``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from studies.sft_prior import smc_only
from studies.sft_prior.cells import cell_main

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
RUNS = REPO / "runs/sft-late"
EVIDENCE = REPO / "evidence/sft-prior/late"
ARM = "smc@4+progress-late"
ROUND3_KEPT = smc_only.ROUND3_KEPT


def protocol() -> dict[str, Any]:
    return json.loads((HERE / "protocol.json").read_text())


def cell_protocol() -> dict[str, Any]:
    """The round-3 cell protocol, its SMC arm ``ARM`` resampling after the declared steps."""
    return smc_only.cell_protocol(ARM, {"resample_steps": protocol()["resample_steps"]})


def config(seed: int) -> dict[str, Any]:
    """The ``amc run`` configuration of one declared seed: the SMC arm only."""
    return smc_only.config(cell_protocol(), seed, RUNS)


def main(argv: list[str] | None = None) -> int:
    return cell_main(HERE, RUNS, EVIDENCE, __doc__ or "", argv, config)


if __name__ == "__main__":
    raise SystemExit(main())
