"""The regime search's validation tasks, drawn with a recorded seed (see ``protocol.json``).

Depth 1: from the train tasks that earlier LLM studies already touched (so the untouched ones
stay fresh for a declared test set); depth 2: from every depth-2 train task (no study has used
depth 2). Touched = every task id in a kept results file under ``evidence/llm-regime`` or in a
declared task list.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np

from amc.envs.textcraft.env import TextCraftOptions, TextCraftSuite

REPO = Path(__file__).resolve().parents[3]


def touched_tasks(root: Path = REPO) -> set[str]:
    """Task ids any earlier embedded-LLM study ran or declared."""
    ids: set[str] = set()
    for f in sorted((root / "evidence/llm-regime").rglob("*.jsonl*")):
        if "regime-search" in f.parts:
            continue
        opener = gzip.open if f.suffix == ".gz" else open
        with opener(f, "rt") as fh:  # type: ignore[operator]
            rows = (json.loads(line) for line in fh if line.strip())
            ids |= {str(r["task_id"]) for r in rows if "task_id" in r}
    for f in [*sorted((root / "studies/llm_regime/declared").glob("*.json")),
              root / "configs/llm-regime/rounds-frozen-tasks.json"]:
        if f.is_file():
            d = json.loads(f.read_text())
            ids |= {str(t) for t in (d.get("tasks") if isinstance(d, dict) else d) or []}
    return ids


def validation_tasks(depth: int, n: int, seed: int, root: Path = REPO) -> list[str]:
    """``n`` train tasks of ``depth`` drawn without replacement by ``default_rng(seed)``."""
    suite = TextCraftSuite(TextCraftOptions(min_depth=depth, max_depth=depth, n_distractors=10))
    pool = sorted(suite.task_ids("train"), key=int)
    if depth == 1:
        touched = touched_tasks(root)
        pool = [t for t in pool if t in touched]
    picked = np.random.default_rng(seed).choice(pool, n, replace=False)
    return sorted((str(t) for t in picked), key=int)
