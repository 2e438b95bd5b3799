"""The fine-tuned prior's SFT run as a table: held-out skill at every kept checkpoint.

Reads each kept checkpoint's ``policy.json`` (``sft/kept/textcraft/step-NNNNNN/``: the
held-out tasks' completion loss and greedy action accuracy at that step, written by the SFT
run) and the demonstrations' record, and writes ``evidence/sft-prior/sft-run.md``, which
``scripts/results_doc.sh`` puts into docs/results.md. Every figure is read, none typed.

    python -m studies.sft_prior.report
"""

from __future__ import annotations

import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
KEPT = REPO / "sft/kept/textcraft"
OUT = REPO / "evidence/sft-prior/sft-run.md"


def table(kept: Path = KEPT) -> str:
    rows = [json.loads(p.read_text()) for p in sorted(kept.glob("step-*/policy.json"))]
    lines = ["| checkpoint (optimiser steps) | held-out completion loss (nats/token) "
             "| held-out greedy action accuracy |", "|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['step']} | {r['val_loss']:.3f} | {r['val_action_acc']:.3f} |")
    if not rows:
        lines.append("| – | – | – |")
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
