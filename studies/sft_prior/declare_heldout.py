"""Declare the tasks the SFT demonstrations must never use (written once, before any SFT run).

TextCraft depths 2 and 3, default split, 10 distractors. Per depth, from the *train* split:

- ``validation``: the regime search's tasks (checkpoint and regime choice). Depth 2 keeps the
  10 tasks of the earlier regime search (``regime_search/protocol.json``) and adds fresh ones;
- ``test_reserve``: train tasks kept for a declared test set beside the test split (whose tasks
  are never demonstrated: demonstrations come from the train split only).

Draws are ``numpy.random.default_rng(seed).choice`` without replacement over the sorted pool;
the seeds and sizes are in the file. ``python -m studies.sft_prior.declare_heldout`` refuses to
overwrite an existing declaration.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path

import numpy as np

from amc.envs.textcraft.env import TextCraftOptions, TextCraftSuite

HERE = Path(__file__).resolve().parent
OUT = HERE / "heldout.json"
SIZES = {2: (30, 60), 3: (16, 24)}
"""depth -> (validation tasks, test-reserve tasks)."""
SEED = 6100


def earlier_search_tasks() -> list[str]:
    proto = json.loads((HERE.parent / "llm_regime/regime_search/protocol.json").read_text())
    return [str(t) for t in proto["collection"]["tasks"]["2"]]


def declare() -> dict:
    tasks: dict[str, dict[str, list[str]]] = {}
    for depth, (n_val, n_test) in SIZES.items():
        suite = TextCraftSuite(TextCraftOptions(min_depth=depth, max_depth=depth,
                                                n_distractors=10))
        pool = sorted(suite.task_ids("train"), key=int)
        val = earlier_search_tasks() if depth == 2 else []
        rest = [t for t in pool if t not in val]
        rng = np.random.default_rng(SEED + depth)
        val += [str(t) for t in rng.choice(rest, n_val - len(val), replace=False)]
        rest = [t for t in rest if t not in val]
        test = [str(t) for t in rng.choice(rest, n_test, replace=False)]
        tasks[f"validation-depth{depth}"] = sorted(val, key=int)
        tasks[f"test-reserve-depth{depth}"] = sorted(test, key=int)
    return {
        "name": "sft-prior-heldout",
        "issue": 61,
        "env": {"name": "textcraft", "split": "default", "n_distractors": 10},
        "rule": "per depth: validation = the earlier regime search's depth-2 tasks plus fresh "
                "draws; test reserve = draws from the rest; default_rng(seed + depth)",
        "seed": SEED,
        "sizes": {str(k): {"validation": v[0], "test_reserve": v[1]} for k, v in SIZES.items()},
        "declared_utc": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "tasks": tasks,
    }


def main() -> int:
    if OUT.exists():
        print(f"error: {OUT.name}: already declared; a declaration is written once",
              file=sys.stderr)
        return 2
    OUT.write_text(json.dumps(declare(), indent=1) + "\n")
    print(f"declared {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
