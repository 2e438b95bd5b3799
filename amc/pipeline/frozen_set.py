"""The promotion gate's frozen evaluation set: its record, the refusal of any other set, and
the count of decisions tested on it (the reuse rule of :mod:`amc.pipeline.gate_stats` spends
the level over that count)."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

from amc.results import write_json_atomic


def eval_set(env: str, split: str, tasks: list[str], seeds: list[int]) -> dict[str, Any]:
    """The evaluation set as a record, with a digest that identifies it."""
    body = {"env": env, "split": split, "tasks": [str(t) for t in tasks],
            "seeds": [int(s) for s in seeds]}
    digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]
    return {**body, "digest": digest}


def check_frozen(path: Path, current: dict[str, Any]) -> str | None:
    """Freeze ``current`` when nothing is frozen yet; the refusal reason when it differs."""
    if not path.is_file():
        write_json_atomic(path, {**current, "frozen_at": time.strftime(
            "%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
        return None
    frozen = json.loads(path.read_text())
    if frozen.get("digest") != current["digest"]:
        return (f"evaluation set {current['digest']} ({len(current['tasks'])} tasks, seeds "
                f"{current['seeds']}) is not the frozen set {frozen.get('digest')} of {path}")
    return None


def frozen_decisions(path: Path) -> int:
    """How many decisions have been tested on the frozen set of ``path`` (0 when none)."""
    if not path.is_file():
        return 0
    return int(json.loads(path.read_text()).get("decisions", 0))


def count_decision(path: Path) -> None:
    """Record one more tested decision in the frozen set's file."""
    if path.is_file():
        frozen = json.loads(path.read_text())
        write_json_atomic(path, {**frozen, "decisions": int(frozen.get("decisions", 0)) + 1})
