"""The plan-67 cell's declared analysis (``protocol.json``): the plan-band analysis (SMC with
the progress value against Best-of-4, paired by task, seeds averaged within a task; the
value's within AUC by step, exploratory) on this cell's records; beside it (exploratory) the
test-set rule's sizing at half the measured difference.

    python -m studies.sft_prior.plan67.analyse [--check]
"""

from __future__ import annotations

from typing import Any

from studies.sft_prior import sizing
from studies.sft_prior.band import analyse as band
from studies.sft_prior.cells import analyse_main
from studies.sft_prior.plan67.declare_test import RULE
from studies.sft_prior.plan67.run import EVIDENCE, protocol

SOURCE = "studies/sft_prior/plan67/protocol.json"
PRIOR = "Round-3 DAgger checkpoint sft/kept/textcraft-dagger3/step-000050"
TASKS = ("TextCraft depth 2-3 tasks whose menu-form plan takes 6-7 steps, {n} fresh tasks "
         "(never demonstrated, never played by an LLM study)")


def analyse() -> dict[str, Any]:
    return band.with_sizing(EVIDENCE, protocol(), RULE)


def markdown(r: dict[str, Any]) -> str:
    md = band.markdown(r, protocol(), SOURCE, PRIOR, TASKS)
    s = r.get("sizing_exploratory")
    return md + sizing.markdown(s) if s else md


def main(argv: list[str] | None = None) -> int:
    return analyse_main(argv, __doc__ or "", EVIDENCE, analyse, markdown,
                        "no plan-67 records kept yet")


if __name__ == "__main__":
    raise SystemExit(main())
