"""The refusal-penalty cell's declared analysis (``protocol.json``): its SMC arm (the progress
value charging refused actions) against the round-3 cell's kept Best-of-4, paired by task,
seeds averaged within a task; beside it (exploratory), against the round-3 cell's SMC arm with
the plain progress value.

    python -m studies.sft_prior.refusals.analyse [--check]
"""

from __future__ import annotations

import argparse
from typing import Any

from studies.sft_prior.cells import keep_or_check
from studies.sft_prior.dagger3 import band as round3
from studies.sft_prior.multistep.analyse import paired, read
from studies.sft_prior.refusals.run import ARM, EVIDENCE, cell_protocol, protocol


def analyse() -> dict[str, Any]:
    cell = cell_protocol()["cell"]
    bon_name = list(cell["arms"])[1]
    new = [r for r in read(EVIDENCE, "*__seed*.jsonl.gz") if r["method"] == ARM]
    kept = read(round3.EVIDENCE, "*__seed*.jsonl.gz")
    bon = [r for r in kept if r["method"] == bon_name]
    plain = [r for r in kept if r["method"] != bon_name]
    (plain_name,) = {r["method"] for r in plain}
    vs_plain = paired(new + plain, {**cell, "arms": {ARM: {}, plain_name: {}}})
    return {**paired(new + bon, cell), "vs_plain_progress_exploratory": vs_plain}


def markdown(r: dict[str, Any]) -> str:
    p, cell = protocol(), cell_protocol()["cell"]
    smc_name, bon_name = list(cell["arms"])
    d, e = r["difference"], r["vs_plain_progress_exploratory"]
    state = ("complete" if r["runs"] == r["declared_runs"]
             else f"incomplete: {r['runs']} of {r['declared_runs']} declared runs")
    verdict = {True: "**met**", False: "**not met**", None: "not judged (cell incomplete)"}
    ev = e["difference"]
    return "\n".join([
        f"Declared in `studies/sft_prior/refusals/protocol.json` ({p['declared_utc']}); {state}. "
        f"Round-3 DAgger checkpoint {cell_protocol()['prior']['options']['adapter']} served in "
        f"bfloat16, the plan-band tasks ({r['tasks']} validation tasks, menu plans of 6-10 "
        f"steps), seeds {', '.join(map(str, cell['seeds']))}, H {cell['horizon']}, "
        f"N {cell['n']}.", "",
        f"| arm | success | prior calls / run vs {bon_name} |", "|---|---|---|",
        f"| {smc_name} (resampling after every step 1-{cell['horizon'] - 1}; beta 0.1; progress "
        f"value, {p['value']['options']['invalid_penalty']} plan steps per refused action) | "
        f"{r['success'][smc_name]:.3f} | {r['calls_ratio']:.2f}x |",
        f"| {bon_name} (the round-3 cell's kept runs) | {r['success'][bon_name]:.3f} | 1x |", "",
        f"Difference {smc_name} - {bon_name}, paired by task (seeds averaged within a task): "
        f"{d['mean']:+.3f} [{d['lo']:+.3f}, {d['hi']:+.3f}], sign-flip p {d['p']:.4f}, "
        f"{d['tasks']} tasks. Goal (>= +0.15, interval above 0, p < 0.05, calls <= 8x): "
        f"{verdict[r['goal_met']]}.", "",
        "Beside it (exploratory): against the round-3 cell's SMC arm with the plain progress "
        f"value (same prior, tasks, seeds and schedule): {ev['mean']:+.3f} [{ev['lo']:+.3f}, "
        f"{ev['hi']:+.3f}], sign-flip p {ev['p']:.4f}, {e['runs']} paired runs.", ""])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--check", action="store_true", help="recompute and compare, write nothing")
    a = ap.parse_args(argv)
    if not list(EVIDENCE.glob("*.jsonl.gz")):
        print("no refusal-penalty records kept yet")
        return 0
    r = analyse()
    return keep_or_check(EVIDENCE, r, "" if a.check else markdown(r), a.check)


if __name__ == "__main__":
    raise SystemExit(main())
