"""The horizon-16 cell's declared analysis (``protocol.json``): the plan-band analysis (SMC
with the progress value against Best-of-4, paired by task, seeds averaged within a task; the
value's within AUC by step, exploratory) on this cell's records; beside it (exploratory) the
test-set sizing the declared rule would use: the variance components of the per-seed
differences and the tasks needed at half the measured difference for 4-16 seeds per task.

    python -m studies.sft_prior.horizon.analyse [--check]
"""

from __future__ import annotations

import argparse
from typing import Any

from studies.sft_prior.band import analyse as band
from studies.sft_prior.cells import keep_or_check
from studies.sft_prior.horizon.declare_test import sizing
from studies.sft_prior.horizon.run import EVIDENCE, protocol
from studies.sft_prior.multistep.analyse import read

SOURCE = "studies/sft_prior/horizon/protocol.json"
PRIOR = "Round-3 DAgger checkpoint sft/kept/textcraft-dagger3/step-000050"


def analyse() -> dict[str, Any]:
    p = protocol()
    r = band.analyse(EVIDENCE, p)
    smc, bon = list(p["cell"]["arms"])
    if r["runs"] == r["declared_runs"]:
        r["sizing_exploratory"] = sizing(read(EVIDENCE, "*__seed*.jsonl.gz"), smc, bon,
                                         r["difference"]["mean"] / 2)
    return r


def markdown(r: dict[str, Any]) -> str:
    md = band.markdown(r, protocol(), SOURCE, PRIOR)
    s = r.get("sizing_exploratory")
    if not s:
        return md
    return md + "\n".join([
        "", f"Beside it (exploratory): the test-set rule's sizing at half this difference "
        f"({s['effect']:+.3f}): within-task variance of a seed's difference "
        f"{s['within_var']:.4f}, between-task variance {s['between_var']:.4f}; tasks needed "
        "for 80% power with S seeds per task: " + ", ".join(
            f"S {k}: {v}" for k, v in s["tasks_needed"].items()) + ".", ""])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--check", action="store_true", help="recompute and compare, write nothing")
    a = ap.parse_args(argv)
    if not list(EVIDENCE.glob("*.jsonl.gz")):
        print("no horizon-16 records kept yet")
        return 0
    r = analyse()
    return keep_or_check(EVIDENCE, r, "" if a.check else markdown(r), a.check)


if __name__ == "__main__":
    raise SystemExit(main())
