"""The second DAgger round's evaluation: its declared checkpoint plays the plan-band cell.

    python -m studies.sft_prior.dagger2.band --seed S [--keep-only]

1. the checkpoint is chosen by ``protocol.json``'s rule from the round's SFT run
   (``sft/out-dagger2``): the highest held-out greedy action accuracy on the prior's own states
   (ties: the later), and kept in git under ``sft/kept/textcraft-dagger2/step-NNNNNN``;
2. ``amc run`` plays the plan-band cell's declared design (``studies/sft_prior/band/
   protocol.json``: its tasks, seeds, horizon, arms, value and beta) with that adapter, one
   declared seed per process, into ``runs/sft-dagger2-band/seedS`` (resumable);
3. the finished seed files are gzipped into ``evidence/sft-prior/dagger2/band/``.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from studies.sft_prior.band import run as band
from studies.sft_prior.cells import cell_config, keep_gz, play_and_keep
from studies.sft_prior.dagger.search import chosen_step, keep_adapter

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
STAGE = REPO / "sft/out-dagger2/checkpoints"
KEPT = REPO / "sft/kept/textcraft-dagger2"
RUNS = REPO / "runs/sft-dagger2-band"
EVIDENCE = REPO / "evidence/sft-prior/dagger2/band"


def cell_protocol(adapter: Path, seeds: list[int] | None = None) -> dict[str, Any]:
    """The plan-band protocol with ``adapter`` (a kept checkpoint folder) as the prior's and,
    if given, ``seeds`` as its seeds."""
    p = copy.deepcopy(band.protocol())
    p["prior"]["options"]["adapter"] = str(adapter.relative_to(REPO))
    if seeds is not None:
        p["cell"]["seeds"] = list(seeds)
    return p


def chosen_adapter(stage: Path = STAGE, kept: Path = KEPT) -> Path:
    """The declared rule's checkpoint of the SFT run whose checkpoints are in ``stage``, kept
    under ``kept`` (from the run if it is here, else the kept copy)."""
    step, acc = chosen_step(stage if stage.is_dir() else kept)
    print(f"chosen checkpoint {step} (held-out own-state greedy accuracy {acc:.3f})")
    return keep_adapter(step, stage, kept)


def main(argv: list[str] | None = None, stage: Path = STAGE, kept: Path = KEPT,
         runs: Path = RUNS, evidence: Path = EVIDENCE, seeds: list[int] | None = None,
         doc: str = __doc__ or "") -> int:
    """The command line of a DAgger round's plan-band cell: the checkpoint chosen from
    ``stage`` (kept under ``kept``) plays one declared seed (of ``seeds``, default the
    plan-band protocol's) into ``runs/seedS``; finished records are kept in ``evidence``."""
    import argparse

    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--seed", type=int, required=True, help="the declared seed to play")
    ap.add_argument("--keep-only", action="store_true", help="only keep finished results")
    a = ap.parse_args(argv)
    return play_and_keep(
        lambda: cell_config(cell_protocol(chosen_adapter(stage, kept), seeds), a.seed,
                            runs / f"seed{a.seed}"),
        runs / f"seed{a.seed}.yaml",
        lambda: f"kept {keep_gz(runs.glob('seed*/*__seed*.jsonl'), evidence)} records",
        a.keep_only, "--seed")


if __name__ == "__main__":
    raise SystemExit(main())
