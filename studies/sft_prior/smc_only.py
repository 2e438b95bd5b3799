"""An SMC-only cell on the round-3 plan-band design: one field of the round-3 cell's SMC arm
changed (its schedule, its value), the arm renamed, and Best-of-4 taken from the round-3
cell's kept runs rather than replayed (same prior, tasks, seeds and horizon, so the pairing by
(task, seed) holds). Its declared analysis pairs the new arm with that Best-of-4 and, beside it
(exploratory), with the round-3 cell's own SMC arm. The late-resampling and refusal-penalty
cells are two such cells.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from studies.sft_prior.cells import cell_config
from studies.sft_prior.dagger3 import band as round3
from studies.sft_prior.multistep.analyse import paired, read

ROUND3_KEPT = round3.KEPT / "step-000050"


def cell_protocol(arm: str, changes: dict[str, Any]) -> dict[str, Any]:
    """The round-3 cell protocol with its SMC arm renamed ``arm`` and updated by
    ``changes``, Best-of-4 second (kept from the round-3 cell, not replayed)."""
    p = copy.deepcopy(round3.cell_protocol(ROUND3_KEPT))
    smc_name, bon_name = list(p["cell"]["arms"])
    smc = {**p["cell"]["arms"][smc_name], **changes}
    p["cell"]["arms"] = {arm: smc, bon_name: p["cell"]["arms"][bon_name]}
    return p


def config(p: dict[str, Any], seed: int, runs: Path) -> dict[str, Any]:
    """The ``amc run`` configuration of one declared seed of ``p``: the SMC arm only."""
    cfg = cell_config(p, seed, runs / f"seed{seed}")
    cfg["methods"] = [next(iter(p["cell"]["arms"]))]
    return cfg


def analyse(p: dict[str, Any], evidence: Path, beside: str) -> dict[str, Any]:
    """The declared pairing of ``p``'s SMC arm (kept in ``evidence``) with the round-3 cell's
    kept Best-of-4, and under the key ``beside`` with the round-3 cell's SMC arm."""
    cell = p["cell"]
    new_name, bon_name = list(cell["arms"])
    new = [r for r in read(evidence, "*__seed*.jsonl.gz") if r["method"] == new_name]
    kept = read(round3.EVIDENCE, "*__seed*.jsonl.gz")
    bon = [r for r in kept if r["method"] == bon_name]
    old = [r for r in kept if r["method"] != bon_name]
    (old_name,) = {r["method"] for r in old}
    vs_old = paired(new + old, {**cell, "arms": {new_name: {}, old_name: {}}})
    return {**paired(new + bon, cell), beside: vs_old}


def markdown(r: dict[str, Any], p: dict[str, Any], declared: dict[str, Any], source: str,
             arm_text: str, beside: str, beside_text: str) -> str:
    """``r`` (from :func:`analyse` with key ``beside``) as a paragraph and table: ``source``
    declared the cell at ``declared["declared_utc"]``; ``arm_text`` describes the SMC arm,
    ``beside_text`` the exploratory comparison."""
    cell = p["cell"]
    smc_name, bon_name = list(cell["arms"])
    d, e = r["difference"], r[beside]
    state = ("complete" if r["runs"] == r["declared_runs"]
             else f"incomplete: {r['runs']} of {r['declared_runs']} declared runs")
    verdict = {True: "**met**", False: "**not met**", None: "not judged (cell incomplete)"}
    ev = e["difference"]
    return "\n".join([
        f"Declared in `{source}` ({declared['declared_utc']}); {state}. "
        f"Round-3 DAgger checkpoint {p['prior']['options']['adapter']} served in "
        f"bfloat16, the plan-band tasks ({r['tasks']} validation tasks, menu plans of 6-10 "
        f"steps), seeds {', '.join(map(str, cell['seeds']))}, H {cell['horizon']}, "
        f"N {cell['n']}.", "",
        f"| arm | success | prior calls / run vs {bon_name} |", "|---|---|---|",
        f"| {smc_name} ({arm_text}) | {r['success'][smc_name]:.3f} | {r['calls_ratio']:.2f}x |",
        f"| {bon_name} (the round-3 cell's kept runs) | {r['success'][bon_name]:.3f} | 1x |", "",
        f"Difference {smc_name} - {bon_name}, paired by task (seeds averaged within a task): "
        f"{d['mean']:+.3f} [{d['lo']:+.3f}, {d['hi']:+.3f}], sign-flip p {d['p']:.4f}, "
        f"{d['tasks']} tasks. Goal (>= +0.15, interval above 0, p < 0.05, calls <= 8x): "
        f"{verdict[r['goal_met']]}.", "",
        f"Beside it (exploratory): against the round-3 cell's SMC arm {beside_text}: "
        f"{ev['mean']:+.3f} [{ev['lo']:+.3f}, {ev['hi']:+.3f}], sign-flip p {ev['p']:.4f}, "
        f"{e['runs']} paired runs.", ""])
