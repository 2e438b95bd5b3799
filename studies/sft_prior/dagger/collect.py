"""Collect the DAgger round's rollouts of checkpoint 244 (``protocol.json``), resumable, kept.

    python -m studies.sft_prior.dagger.collect --shard 0 --of 2 [--keep-only]

Shard ``k`` of ``n`` plays every n-th declared task (two shards run side by side, one torch
thread each) with ``amc run`` into ``runs/sft-dagger/round1/shardK`` (finished (task, seed)
results survive a restart); the finished seed files are gzipped into
``evidence/sft-prior/dagger/round1/shardK/``, which the SFT run's ``demos.rollout_dirs`` reads.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from studies.sft_prior.cells import keep_gz, play

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
RUNS = REPO / "runs/sft-dagger/round1"
EVIDENCE = REPO / "evidence/sft-prior/dagger/round1"


def protocol(here: Path = HERE) -> dict[str, Any]:
    return json.loads((here / "protocol.json").read_text())


def shard_tasks(tasks: list[str], k: int, n: int) -> list[str]:
    """Every n-th task from the k-th (the shards partition the declared tasks)."""
    if not 0 <= k < n:
        raise ValueError(f"shard {k} of {n}: need 0 <= shard < of")
    return tasks[k::n]


def config(k: int, n: int, here: Path = HERE, runs: Path = RUNS) -> dict[str, Any]:
    """The ``amc run`` configuration of shard ``k`` of ``n`` of the round declared in
    ``here/protocol.json``, played into ``runs/shardK``."""
    col = protocol(here)["collection"]
    return {
        "env": {"name": "textcraft", "options": col["env_options"]},
        "prior": col["prior"],
        "smc": {"max_steps": col["max_steps"], "success_threshold": 1.0},
        "methods": [col["method"]], "task_ids": shard_tasks(col["tasks"], k, n),
        "seeds": col["seeds"], "max_concurrent_tasks": 1,
        "out_dir": str((runs / f"shard{k}").relative_to(REPO)),
    }


def keep_results(k: int, runs: Path = RUNS, evidence: Path = EVIDENCE) -> int:
    """Gzip shard ``k``'s complete seed-file lines into the evidence folder; returns them."""
    return keep_gz((runs / f"shard{k}").glob("*__seed*.jsonl"), evidence / f"shard{k}")


def main(argv: list[str] | None = None, here: Path = HERE, runs: Path = RUNS,
         evidence: Path = EVIDENCE, doc: str = __doc__ or "") -> int:
    """The command line of the round declared in ``here`` (runs and kept evidence folders)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--shard", type=int, required=True)
    ap.add_argument("--of", type=int, default=2)
    ap.add_argument("--keep-only", action="store_true", help="only keep finished results")
    a = ap.parse_args(argv)
    try:
        cfg = config(a.shard, a.of, here, runs)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not a.keep_only:
        rc = play(cfg, runs / f"shard{a.shard}.yaml")
        if rc != 0:
            return rc
    print(f"kept {keep_results(a.shard, runs, evidence)} records of shard {a.shard}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
