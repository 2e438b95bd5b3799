"""The plan-band cell's declared analysis (``protocol.json``), as the progress-value cell's:
SMC resampling after every step with the ``textcraft-progress`` value against Best-of-4, paired
by task, seeds averaged within a task; beside it, the value's within-(task, seed, step) AUC.

    python -m studies.sft_prior.band.analyse [--check]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from studies.sft_prior import sizing
from studies.sft_prior.band.run import EVIDENCE, protocol
from studies.sft_prior.cells import keep_or_check
from studies.sft_prior.multistep.analyse import paired, read
from studies.sft_prior.progress.analyse import within_auc_by_step


def analyse(kept: Path = EVIDENCE, p: dict[str, Any] | None = None) -> dict[str, Any]:
    """The declared analysis of the cell protocol ``p`` (default: this one) kept in ``kept``."""
    cell = (p or protocol())["cell"]
    recs = read(kept, "*__seed*.jsonl.gz")
    return {**paired(recs, cell), "value_within_auc_by_step": within_auc_by_step(
        recs, list(cell["arms"])[1], cell["horizon"], cell["env_options"])}


def with_sizing(kept: Path, p: dict[str, Any], rule: sizing.Rule) -> dict[str, Any]:
    """:func:`analyse` of ``p``'s records in ``kept`` and, once every declared run is kept,
    beside it (exploratory) ``rule``'s test-set sizing at half the measured difference."""
    r = analyse(kept, p)
    smc, bon = list(p["cell"]["arms"])
    if r["runs"] == r["declared_runs"]:
        r["sizing_exploratory"] = sizing.sizing(
            read(kept, "*__seed*.jsonl.gz"), smc, bon, r["difference"]["mean"] / 2,
            rule.seed_options, rule.min_tasks)
    return r


def markdown(r: dict[str, Any], p: dict[str, Any] | None = None,
             source: str = "studies/sft_prior/band/protocol.json",
             prior: str = "DAgger checkpoint dagger1-100",
             tasks: str = "TextCraft depth 2-3 tasks whose menu-form plan takes 6-10 steps, "
                          "{n} validation tasks") -> str:
    """``r`` as a paragraph and table; ``source`` declared ``p`` (default: this protocol),
    whose adapter is ``prior``; ``tasks`` describes the cell's {n} tasks."""
    p = p or protocol()
    cell = p["cell"]
    smc_name, bon_name = list(cell["arms"])
    d = r["difference"]
    state = ("complete" if r["runs"] == r["declared_runs"]
             else f"incomplete: {r['runs']} of {r['declared_runs']} declared runs")
    verdict = {True: "**met**", False: "**not met**", None: "not judged (cell incomplete)"}
    return "\n".join([
        f"Declared in `{source}` ({p['declared_utc']}); {state}. "
        f"{prior} served in bfloat16, {tasks.format(n=r['tasks'])}, H {cell['horizon']}, "
        f"N {cell['n']}.", "",
        f"| arm | success | prior calls / run vs {bon_name} |", "|---|---|---|",
        f"| {smc_name} (resampling after every step 1-{cell['horizon'] - 1}; beta 0.1; "
        f"hand-made value) | {r['success'][smc_name]:.3f} | {r['calls_ratio']:.2f}x |",
        f"| {bon_name} | {r['success'][bon_name]:.3f} | 1x |", "",
        f"Difference {smc_name} - {bon_name}, paired by task (seeds averaged within a task): "
        f"{d['mean']:+.3f} [{d['lo']:+.3f}, {d['hi']:+.3f}], sign-flip p {d['p']:.4f}, "
        f"{d['tasks']} tasks. Goal (>= +0.15, interval above 0, p < 0.05, calls <= 8x): "
        f"{verdict[r['goal_met']]}.", "",
        "Beside it (exploratory, not tested): the value's within-(task, seed, step) AUC over the "
        "Best-of-4 particles still running, against success within H, by step: " + ", ".join(
            f"step {t}: {v:.3f}" for t, v in sorted(r["value_within_auc_by_step"].items(),
                                                   key=lambda kv: int(kv[0]))) + ".", ""])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="recompute and compare, write nothing")
    a = ap.parse_args(argv)
    r = analyse()
    return keep_or_check(EVIDENCE, r, "" if a.check else markdown(r), a.check)


if __name__ == "__main__":
    sys.exit(main())
