"""Collect the third DAgger round's rollouts of dagger2-25 (``protocol.json``), resumable, kept.

    python -m studies.sft_prior.dagger3.collect --shard 0 --of 2 [--keep-only]

Round 1's collection script (``studies/sft_prior/dagger/collect.py``) with this round's
protocol: shard ``k`` of ``n`` plays every n-th declared task into
``runs/sft-dagger/round3/shardK``; the finished seed files are gzipped into
``evidence/sft-prior/dagger3/round3/shardK/``, which ``sft.yaml``'s ``demos.rollout_dirs`` reads.
"""

from __future__ import annotations

from pathlib import Path

from studies.sft_prior.dagger import collect

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
RUNS = REPO / "runs/sft-dagger/round3"
EVIDENCE = REPO / "evidence/sft-prior/dagger3/round3"


def main(argv: list[str] | None = None) -> int:
    return collect.main(argv, HERE, RUNS, EVIDENCE, __doc__ or "")


if __name__ == "__main__":
    raise SystemExit(main())
