"""The refusal-penalty cell's declared analysis (``protocol.json``): its SMC arm (the progress
value charging refused actions) against the round-3 cell's kept Best-of-4, paired by task,
seeds averaged within a task; beside it (exploratory), against the round-3 cell's SMC arm with
the plain progress value.

    python -m studies.sft_prior.refusals.analyse [--check]
"""

from __future__ import annotations

from typing import Any

from studies.sft_prior import smc_only
from studies.sft_prior.cells import analyse_main
from studies.sft_prior.refusals.run import EVIDENCE, cell_protocol, protocol

BESIDE = "vs_plain_progress_exploratory"


def analyse() -> dict[str, Any]:
    return smc_only.analyse(cell_protocol(), EVIDENCE, BESIDE)


def markdown(r: dict[str, Any]) -> str:
    p = cell_protocol()
    return smc_only.markdown(
        r, p, protocol(), "studies/sft_prior/refusals/protocol.json",
        f"resampling after every step 1-{p['cell']['horizon'] - 1}; beta 0.1; progress value, "
        f"{protocol()['value']['options']['invalid_penalty']} plan steps per refused action",
        BESIDE, "with the plain progress value (same prior, tasks, seeds and schedule)")


def main(argv: list[str] | None = None) -> int:
    return analyse_main(argv, __doc__ or "", EVIDENCE, analyse, markdown,
                        "no refusal-penalty records kept yet")


if __name__ == "__main__":
    raise SystemExit(main())
