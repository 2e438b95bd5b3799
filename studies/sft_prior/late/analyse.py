"""The late-resampling cell's declared analysis (``protocol.json``): its SMC arm (resampling
after steps 4-11) against the round-3 cell's kept Best-of-4, paired by task, seeds averaged
within a task; beside it (exploratory), against the round-3 cell's every-step SMC arm.

    python -m studies.sft_prior.late.analyse [--check]
"""

from __future__ import annotations

import argparse
from typing import Any

from studies.sft_prior.cells import keep_or_check
from studies.sft_prior.dagger3 import band as round3
from studies.sft_prior.late.run import ARM, EVIDENCE, cell_protocol, protocol
from studies.sft_prior.multistep.analyse import paired, read


def analyse() -> dict[str, Any]:
    cell = cell_protocol()["cell"]
    bon_name = list(cell["arms"])[1]
    late = [r for r in read(EVIDENCE, "*__seed*.jsonl.gz") if r["method"] == ARM]
    kept = read(round3.EVIDENCE, "*__seed*.jsonl.gz")
    bon = [r for r in kept if r["method"] == bon_name]
    every = [r for r in kept if r["method"] != bon_name]
    (every_name,) = {r["method"] for r in every}
    vs_every = paired(late + every, {**cell, "arms": {ARM: {}, every_name: {}}})
    return {**paired(late + bon, cell), "vs_every_step_exploratory": vs_every}


def markdown(r: dict[str, Any]) -> str:
    p, cell = protocol(), cell_protocol()["cell"]
    smc_name, bon_name = list(cell["arms"])
    d, e = r["difference"], r["vs_every_step_exploratory"]
    state = ("complete" if r["runs"] == r["declared_runs"]
             else f"incomplete: {r['runs']} of {r['declared_runs']} declared runs")
    verdict = {True: "**met**", False: "**not met**", None: "not judged (cell incomplete)"}
    ev = e["difference"]
    return "\n".join([
        f"Declared in `studies/sft_prior/late/protocol.json` ({p['declared_utc']}); {state}. "
        f"Round-3 DAgger checkpoint {cell_protocol()['prior']['options']['adapter']} served in "
        f"bfloat16, the plan-band tasks ({r['tasks']} validation tasks, menu plans of 6-10 "
        f"steps), seeds {', '.join(map(str, cell['seeds']))}, H {cell['horizon']}, "
        f"N {cell['n']}.", "",
        f"| arm | success | prior calls / run vs {bon_name} |", "|---|---|---|",
        f"| {smc_name} (resampling after steps 4-{cell['horizon'] - 1}; beta 0.1; progress "
        f"value) | {r['success'][smc_name]:.3f} | {r['calls_ratio']:.2f}x |",
        f"| {bon_name} (the round-3 cell's kept runs) | {r['success'][bon_name]:.3f} | 1x |", "",
        f"Difference {smc_name} - {bon_name}, paired by task (seeds averaged within a task): "
        f"{d['mean']:+.3f} [{d['lo']:+.3f}, {d['hi']:+.3f}], sign-flip p {d['p']:.4f}, "
        f"{d['tasks']} tasks. Goal (>= +0.15, interval above 0, p < 0.05, calls <= 8x): "
        f"{verdict[r['goal_met']]}.", "",
        "Beside it (exploratory): against the round-3 cell's SMC arm resampling after every "
        f"step 1-11 (same prior, tasks and seeds): {ev['mean']:+.3f} [{ev['lo']:+.3f}, "
        f"{ev['hi']:+.3f}], sign-flip p {ev['p']:.4f}, {e['runs']} paired runs.", ""])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--check", action="store_true", help="recompute and compare, write nothing")
    a = ap.parse_args(argv)
    if not list(EVIDENCE.glob("*.jsonl.gz")):
        print("no late-resampling records kept yet")
        return 0
    r = analyse()
    return keep_or_check(EVIDENCE, r, "" if a.check else markdown(r), a.check)


if __name__ == "__main__":
    raise SystemExit(main())
