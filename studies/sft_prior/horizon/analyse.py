"""The horizon-16 cell's declared analysis (``protocol.json``): the plan-band analysis (SMC
with the progress value against Best-of-4, paired by task, seeds averaged within a task; the
value's within AUC by step, exploratory) on this cell's records; beside it (exploratory) the
test-set sizing the declared rule would use: the variance components of the per-seed
differences and the tasks needed at half the measured difference for 4-16 seeds per task.

    python -m studies.sft_prior.horizon.analyse [--check]
"""

from __future__ import annotations

from typing import Any

from studies.sft_prior import sizing
from studies.sft_prior.band import analyse as band
from studies.sft_prior.cells import analyse_main
from studies.sft_prior.horizon.declare_test import RULE
from studies.sft_prior.horizon.run import EVIDENCE, protocol

SOURCE = "studies/sft_prior/horizon/protocol.json"
PRIOR = "Round-3 DAgger checkpoint sft/kept/textcraft-dagger3/step-000050"


def analyse() -> dict[str, Any]:
    return band.with_sizing(EVIDENCE, protocol(), RULE)


def markdown(r: dict[str, Any]) -> str:
    md = band.markdown(r, protocol(), SOURCE, PRIOR)
    s = r.get("sizing_exploratory")
    return md + sizing.markdown(s) if s else md


def main(argv: list[str] | None = None) -> int:
    return analyse_main(argv, __doc__ or "", EVIDENCE, analyse, markdown,
                        "no horizon-16 records kept yet")


if __name__ == "__main__":
    raise SystemExit(main())
