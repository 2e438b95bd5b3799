"""The DAgger round's results: the SFT run on own states, and the second search's rooms.

Reads the round's SFT metrics (kept at ``evidence/sft-prior/dagger/sft-metrics.json``: the
starting checkpoint's held-out figures and every checkpoint's, overall and on the prior's own
states) and the search cells -- (244, depth 2) kept by the first search and the DAgger
checkpoint's cell -- and applies the first search's estimator and choice rule
(:mod:`studies.sft_prior.regime_search.analyse`). A cell is analysed only when every declared
(task, seed) is kept. Writes ``room.json`` and ``room.md`` beside the cells and
``sft-run.md``; ``--check`` recomputes room.json and compares.

    python -m studies.sft_prior.dagger.analyse --keep-sft   # once, after the round's SFT run
    python -m studies.sft_prior.dagger.analyse [--check]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from studies.llm_regime.regime_search.analyse import (
    publish,
)
from studies.sft_prior.dagger.search import EVIDENCE as DAGGER_CELLS
from studies.sft_prior.regime_search import analyse as first
from studies.sft_prior.regime_search.run import EVIDENCE as FIRST_CELLS
from studies.sft_prior.regime_search.run import step_dir

HERE = Path(__file__).resolve().parent
OUT = HERE.parents[2] / "evidence/sft-prior/dagger"
SFT_METRICS = OUT / "sft-metrics.json"


def cells(depth: int = 2) -> list[tuple[Any, Path]]:
    """(checkpoint label, kept folder) of the second search's cells at ``depth``."""
    label = "dagger1"
    if SFT_METRICS.is_file():
        label = f"dagger1-{json.loads(SFT_METRICS.read_text())['chosen_step']}"
    return [(244, FIRST_CELLS / step_dir(244) / f"depth{depth}"),
            (label, DAGGER_CELLS / f"depth{depth}")]


def analyse(depth: int = 2) -> dict[str, Any]:
    rows, out_cells = [], []
    for rank, (ckpt, folder) in enumerate(cells(depth)):
        # "checkpoint" orders the rule's last tie-break: the DAgger round comes later
        cell, got = first.analyse_cell(folder, depth, {"checkpoint": ckpt},
                                       {"checkpoint": rank, "checkpoint_label": ckpt})
        out_cells.append(cell)
        rows += got
    best = first.choose(rows)
    met = best is not None and best["n"] == 4 and best["room"] >= 0.15
    return {"protocol": "studies/sft_prior/dagger/protocol.json", "cells": out_cells,
            "regimes": rows, "chosen": best, "goal_met": met}


def markdown(result: dict[str, Any]) -> str:
    """The first search's tables, with checkpoint labels."""
    shown = {**result, "regimes": [{**r, "checkpoint": r["checkpoint_label"]}
                                   for r in result["regimes"]],
             "chosen": None if result["chosen"] is None else
             {**result["chosen"], "checkpoint": result["chosen"]["checkpoint_label"]}}
    return first.markdown(shown)


def sft_table(metrics: dict[str, Any], start: str = "checkpoint 244") -> str:
    """Held-out loss and greedy action accuracy, overall and on the prior's own states, at
    the start (``start``) and at every checkpoint of the round."""
    lines = ["| weights | held-out loss | held-out greedy accuracy | own-state loss "
             "| own-state greedy accuracy |", "|---|---|---|---|---|"]
    rows = [(f"{start} (start)", metrics["initial"])] + [
        (f"DAgger step {c['step']}", c) for c in metrics["checkpoints"]]
    for name, r in rows:
        lines.append(f"| {name} | {r['val_loss']:.3f} | {r['val_action_acc']:.3f} "
                     f"| {r['val_loss_own']:.3f} | {r['val_action_acc_own']:.3f} |")
    return "\n".join(lines) + "\n"


def keep_sft(run: Path = HERE.parents[2] / "sft/out-dagger1",
             dst: Path = SFT_METRICS) -> dict[str, Any]:
    """A round's SFT metrics (``run``, e.g. ``sft/out-dagger1``, is not in git), its own-state
    pair count and the declared checkpoint choice, kept at ``dst``."""
    from studies.sft_prior.dagger.search import chosen_step

    m = json.loads((run / "metrics.json").read_text())
    skills = 2  # params.yaml sft.demos.skills [1.0, 0.5]: episodes 0, 1 are the planner's
    with open(run / "demos.jsonl") as f:
        own = sum(1 for line in f if json.loads(line)["episode"] >= skills)
    keep = {k: m[k] for k in ("pairs", "data_sha256", "steps", "costs", "initial",
                              "registered")}
    keep["checkpoints"] = [{k: v for k, v in c.items() if k != "path"} for c in m["checkpoints"]]
    keep["own_pairs"], keep["chosen_step"] = own, chosen_step(run / "checkpoints")[0]
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text(json.dumps(keep, indent=1, sort_keys=True) + "\n")
    return keep


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="recompute and compare room.json")
    ap.add_argument("--keep-sft", action="store_true", help="keep the round's SFT metrics")
    args = ap.parse_args(argv)
    if args.keep_sft:
        keep_sft()
    if SFT_METRICS.is_file() and not args.check:
        m = json.loads(SFT_METRICS.read_text())
        (OUT / "sft-run.md").write_text(
            f"One DAgger round from checkpoint 244: {m['pairs']} pairs ({m['own_pairs']} "
            f"labelling the prior's own states), {m['steps']} steps, {m['costs']['wall_s']:.0f} "
            f"s wall, {m['costs']['cpu_s']:.0f} s CPU. Held-out = the first run's held-out "
            "tasks (never trained on by either run); own-state = their pairs labelling states "
            "checkpoint 244's own rollouts reached. Chosen (declared rule: best own-state "
            f"greedy accuracy, ties later): step {m['chosen_step']}.\n\n" + sft_table(m))
    result = analyse()
    return publish(result, OUT, markdown(result), args.check)


if __name__ == "__main__":
    raise SystemExit(main())
