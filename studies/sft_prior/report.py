"""The fine-tuned prior's SFT run as a table: held-out skill at every checkpoint.

Reads the run's curve as kept for resuming (``sft/kept/textcraft/resume/curve.jsonl``: at every
checkpoint the held-out tasks' completion loss and greedy action accuracy, and the wall and
CPU seconds spent) and which checkpoints are kept, and writes
``evidence/sft-prior/sft-run.md``, which ``scripts/results_doc.sh`` puts into docs/results.md.
Every figure is read, none typed.

    python -m studies.sft_prior.report
"""

from __future__ import annotations

import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
KEPT = REPO / "sft/kept/textcraft"
OUT = REPO / "evidence/sft-prior/sft-run.md"


def table(kept: Path = KEPT) -> str:
    """One row per checkpoint of the run's curve (``resume/curve.jsonl``): held-out loss and
    greedy action accuracy, the wall and CPU seconds spent so far, and whether it is kept."""
    curve = kept / "resume" / "curve.jsonl"
    rows = [json.loads(x) for x in curve.read_text().splitlines()] if curve.is_file() else []
    lines = ["| checkpoint (optimiser steps) | held-out completion loss (nats/token) "
             "| held-out greedy action accuracy | wall s so far | CPU s so far | kept |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        if "val_loss" not in r:
            continue
        step = int(r["step"])
        is_kept = "yes" if (kept / f"step-{step:06d}").is_dir() else "no"
        lines.append(f"| {step} | {r['val_loss']:.3f} | {r['val_action_acc']:.3f} "
                     f"| {r['wall_s']:.0f} | {r['cpu_s']:.0f} | {is_kept} |")
    if len(lines) == 2:
        lines.append("| – | – | – | – | – | – |")
    return "\n".join(lines) + "\n"


def main() -> int:
    from amc.sft.stage import load_options

    share = load_options(REPO / "params.yaml").holdout_fraction
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(
        f"Held-out = the demonstrations of {share:.0%} of the demonstration tasks (drawn by the "
        "run's seed), never trained on; greedy action accuracy = the share of held-out states at "
        "which the model's most likely tokens spell the planner's action exactly.\n\n"
        + table())
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
