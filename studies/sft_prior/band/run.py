"""Play the declared plan-band cell (``protocol.json``), one seed per process, and keep it.

    python -m studies.sft_prior.band.run --seed S [--keep-only]

``amc run`` plays both arms (SMC resampling after every step 1-11 with the hand-made
``textcraft-progress`` value, and Best-of-4) on the 24 validation tasks whose plans take 6 to
10 menu steps, with the DAgger checkpoint served in bfloat16, into ``runs/sft-band/seedS``
(finished (task, method, seed) results survive a restart); the finished seed files are
gzipped into ``evidence/sft-prior/band/``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from studies.sft_prior.cells import cell_config, cell_main

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
RUNS = REPO / "runs/sft-band"
EVIDENCE = REPO / "evidence/sft-prior/band"


def protocol() -> dict[str, Any]:
    return json.loads((HERE / "protocol.json").read_text())


def config(seed: int) -> dict[str, Any]:
    """The ``amc run`` configuration of one declared seed."""
    return cell_config(protocol(), seed, RUNS / f"seed{seed}")


def main(argv: list[str] | None = None) -> int:
    return cell_main(HERE, RUNS, EVIDENCE, __doc__ or "", argv)


if __name__ == "__main__":
    raise SystemExit(main())
