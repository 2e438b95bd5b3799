"""The late-resampling cell's declared analysis (``protocol.json``): its SMC arm (resampling
after steps 4-11) against the round-3 cell's kept Best-of-4, paired by task, seeds averaged
within a task; beside it (exploratory), against the round-3 cell's every-step SMC arm.

    python -m studies.sft_prior.late.analyse [--check]
"""

from __future__ import annotations

from typing import Any

from studies.sft_prior import smc_only
from studies.sft_prior.cells import analyse_main
from studies.sft_prior.late.run import EVIDENCE, cell_protocol, protocol

BESIDE = "vs_every_step_exploratory"


def analyse() -> dict[str, Any]:
    return smc_only.analyse(cell_protocol(), EVIDENCE, BESIDE)


def markdown(r: dict[str, Any]) -> str:
    p = cell_protocol()
    return smc_only.markdown(
        r, p, protocol(), "studies/sft_prior/late/protocol.json",
        f"resampling after steps 4-{p['cell']['horizon'] - 1}; beta 0.1; progress value",
        BESIDE, "resampling after every step 1-11 (same prior, tasks and seeds)")


def main(argv: list[str] | None = None) -> int:
    return analyse_main(argv, __doc__ or "", EVIDENCE, analyse, markdown,
                        "no late-resampling records kept yet")


if __name__ == "__main__":
    raise SystemExit(main())
