"""The third DAgger round's results: its SFT run on own states, and the plan-band cell with
seeds 0-3.

Keeps the round's SFT metrics (``--keep-sft``, once after the run: ``sft/out-dagger3`` is not in
git) at ``evidence/sft-prior/dagger3/sft-metrics.json`` and writes ``sft-run.md`` from them;
analyses the kept plan-band cell by the plan-band protocol's declared analysis over the four
seeds into ``band/result.json`` and ``band/result.md``, with the exploratory seeds-0-and-1 read
(the earlier rounds' design) beside it; ``--check`` recomputes result.json and compares.

    python -m studies.sft_prior.dagger3.analyse --keep-sft   # once, after the round's SFT run
    python -m studies.sft_prior.dagger3.analyse [--check]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from amc import stats
from studies.sft_prior.band.run import protocol as band_protocol
from studies.sft_prior.dagger import analyse as round1
from studies.sft_prior.dagger2 import analyse as round2
from studies.sft_prior.dagger3.band import EVIDENCE, HERE, KEPT, REPO, cell_protocol
from studies.sft_prior.multistep.analyse import arm, paired, read

OUT = REPO / "evidence/sft-prior/dagger3"
EARLIER_SEEDS = [0, 1]  # the plan-band design of rounds 1 and 2


def sft_markdown(m: dict[str, Any]) -> str:
    return (f"The third DAgger round from dagger2-25: {m['pairs']} pairs ({m['own_pairs']} "
            f"labelling the priors' own states, three rounds), {m['steps']} steps, "
            f"{m['costs']['wall_s']:.0f} s wall, {m['costs']['cpu_s']:.0f} s CPU. Held-out = "
            "the first run's held-out tasks (never trained on by any run); own-state = their "
            "pairs labelling states checkpoint 244's, dagger1-100's and dagger2-25's own "
            "rollouts reached. Chosen (declared rule: best own-state greedy accuracy, ties "
            f"later): step {m['chosen_step']}.\n\n" + round1.sft_table(m, "dagger2-25"))


def kept_protocol() -> dict[str, Any]:
    return round2.kept_protocol(KEPT, HERE, cell_protocol)


def sizing(recs: list[dict[str, Any]], cell: dict[str, Any]) -> dict[str, Any]:
    """Exploratory: the per-task differences' sd (seeds averaged within a task) and the tasks a
    two-sided t test at level 0.05 needs for 80% power at half the measured difference, beside
    the band's test reserve (the plan-band protocol's test_set_rule)."""
    smc, bon = (arm(recs, m) for m in cell["arms"])
    keys = sorted(set(smc) & set(bon))
    d = np.array(list(stats.task_means(
        (k[0], smc[k]["success"] - bon[k]["success"]) for k in keys).values()))
    sd = float(d.std(ddof=1))
    return {"sd": sd, "tasks_for_80pct_power_at_half": stats.tasks_for_power(d.mean() / 2, sd),
            "reserve_tasks": len(band_protocol()["test_set_rule"]["reserve"])}


def beside(r: dict[str, Any]) -> str:
    """Adds to ``r`` the same paired analysis on seeds 0 and 1 only (exploratory: the earlier
    rounds' design) and the exploratory test sizing; returns their paragraph."""
    cell = kept_protocol()["cell"]
    recs = read(EVIDENCE, "*__seed*.jsonl.gz")
    z = r["sizing_exploratory"] = sizing(recs, cell)
    early = [x for x in recs if int(x["seed"]) in EARLIER_SEEDS]
    e = r["seeds_0_1_exploratory"] = paired(early, {**cell, "seeds": EARLIER_SEEDS})
    smc, bon = list(cell["arms"])
    d = e["difference"]
    return (f"Beside it (exploratory: the earlier rounds' design, seeds 0 and 1 only): {smc} "
            f"{e['success'][smc]:.3f}, {bon} {e['success'][bon]:.3f}, {d['mean']:+.3f} "
            f"[{d['lo']:+.3f}, {d['hi']:+.3f}], sign-flip p {d['p']:.4f}, {e['runs']} of "
            f"{e['declared_runs']} runs. Exploratory sizing: the per-task differences (four "
            f"seeds averaged) have sd {z['sd']:.3f}; a test at half this difference would need "
            f"{z['tasks_for_80pct_power_at_half']} tasks for 80% power (two-sided t, level "
            f"0.05), and the band's test reserve holds {z['reserve_tasks']}.\n")


def main(argv: list[str] | None = None) -> int:
    return round2.report(argv, OUT, REPO / "sft/out-dagger3", kept_protocol, sft_markdown,
                         "studies/sft_prior/dagger3/protocol.json (the plan-band design, "
                         "seeds 0-3)", "Round-3", beside)


if __name__ == "__main__":
    raise SystemExit(main())
