"""Play the declared plan-67 cell (``protocol.json``), one seed per process, and keep it.

    python -m studies.sft_prior.plan67.run --seed S [--keep-only]

``amc run`` plays both arms (SMC with the progress value resampling after steps 1-11, and
Best-of-4) with the round-3 prior on the cell's fresh 6-7-step tasks into
``runs/sft-plan67/seedS`` (resumable); the finished seed files are gzipped into
``evidence/sft-prior/plan67/``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from studies.sft_prior.cells import cell_main

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
RUNS = REPO / "runs/sft-plan67"
EVIDENCE = REPO / "evidence/sft-prior/plan67"


def protocol() -> dict[str, Any]:
    return json.loads((HERE / "protocol.json").read_text())


def main(argv: list[str] | None = None) -> int:
    return cell_main(HERE, RUNS, EVIDENCE, __doc__ or "", argv)


if __name__ == "__main__":
    raise SystemExit(main())
