"""Exploratory read of the kept progress-value and plan-band cells: success of each arm by the
length of the task's menu-form plan (``amc.envs.textcraft.planner.menu_plan``, from an empty
inventory), tasks counted once (seeds averaged within a task). It shows where the room lives:
short plans that Best-of-N already solves, long ones the horizon cannot finish.

    python -m studies.sft_prior.progress.by_plan   # evidence/sft-prior/progress/by-plan-length.md
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np

from amc.envs.replay import build_suite
from amc.envs.textcraft.planner import menu_plan
from studies.sft_prior.multistep.analyse import arm, read

HERE = Path(__file__).resolve().parent
EVIDENCE = HERE.parents[2] / "evidence/sft-prior"
CELLS = {"progress": HERE / "protocol.json", "band": HERE.parent / "band/protocol.json"}


def by_plan(name: str) -> list[str]:
    """Table rows of one kept cell: plan length, tasks, each arm's mean success."""
    cell = json.loads(CELLS[name].read_text())["cell"]
    suite = build_suite("textcraft", cell["env_options"])
    recs = read(EVIDENCE / name, "*__seed*.jsonl.gz")
    arms = {m: arm(recs, m) for m in cell["arms"]}
    rows: dict[int, list[list[float]]] = defaultdict(list)
    for t in cell["tasks"]:
        rows[len(menu_plan(suite, t))].append(
            [float(np.mean([r["success"] for (k, _), r in a.items() if k == t]))
             for a in arms.values()])
    out = [f"| {name} cell: plan steps | tasks | " + " | ".join(arms) + " |",
           "|---" * (2 + len(arms)) + "|"]
    for n, v in sorted(rows.items()):
        out.append(f"| {n} | {len(v)} | " + " | ".join(f"{x:.2f}" for x in np.mean(v, axis=0))
                   + " |")
    return [*out, ""]


def main() -> int:
    text = "\n".join([*by_plan("progress"), *by_plan("band")])
    (EVIDENCE / "progress/by-plan-length.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
