"""Exploratory read of the kept plan-67 cell (after it ran; not part of its protocol): each
task's success per arm (seeds averaged), with where the task came from (the band's test
reserve, train tasks kept out of SFT, or the default test split), its depth and its plan
length, and how many tasks neither arm ever solved.

    python -m studies.sft_prior.plan67.by_task   # evidence/sft-prior/plan67/by-task.md
"""

from __future__ import annotations

import json

import numpy as np

from amc.envs.replay import build_suite
from amc.envs.textcraft.planner import menu_plan
from studies.sft_prior.multistep.analyse import arm, read
from studies.sft_prior.plan67.run import EVIDENCE, HERE, protocol


def rows() -> list[list[str]]:
    """One row per task: id, source, depth, plan steps, then each arm's mean success."""
    p = protocol()
    held = json.loads((HERE.parent / "heldout.json").read_text())["tasks"]
    suites = {d: build_suite("textcraft", {"min_depth": d, "max_depth": d, "n_distractors": 10})
              for d in (2, 3)}
    recs = read(EVIDENCE, "*__seed*.jsonl.gz")
    arms = [arm(recs, m) for m in p["cell"]["arms"]]
    out = []
    for t in p["cell"]["tasks"]:
        (d,) = [d for d, s in suites.items() if t in s.task_ids("all")]
        src = "reserve" if t in held[f"test-reserve-depth{d}"] else "test split"
        mean = [float(np.mean([r["success"] for (k, _), r in a.items() if k == t])) for a in arms]
        out.append([t, src, str(d), str(len(menu_plan(suites[d], t))), *(f"{m:.3f}" for m in mean)])
    return out


def main() -> int:
    names = list(protocol()["cell"]["arms"])
    rs = rows()
    never = sum(all(float(x) == 0 for x in r[4:]) for r in rs)
    text = "\n".join([
        "| task | source | depth | plan steps | " + " | ".join(names) + " |",
        "|---" * (4 + len(names)) + "|", *("| " + " | ".join(r) + " |" for r in rs), "",
        f"Neither arm solved {never} of the {len(rs)} tasks in any seed.", ""])
    (EVIDENCE / "by-task.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
