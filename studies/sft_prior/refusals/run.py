"""Play the declared refusal-penalty cell (``protocol.json``), one seed per process, and keep it.

    python -m studies.sft_prior.refusals.run --seed S [--keep-only]

``amc run`` plays the SMC arm only (the progress value charging half a plan step per refused
action, resampling after every step 1-11) in the round-3 plan-band design (its checkpoint, 24
tasks, seeds 0-3, H 12, N 4, beta 0.1) into ``runs/sft-refusals/seedS`` (resumable); Best-of-4
is the round-3 cell's kept arm. The finished seed files are gzipped into
``evidence/sft-prior/refusals/``.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from studies.sft_prior.cells import cell_config, keep_gz, play_and_keep
from studies.sft_prior.dagger3 import band as round3

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
RUNS = REPO / "runs/sft-refusals"
EVIDENCE = REPO / "evidence/sft-prior/refusals"
ARM = "smc@4+refusals"
ROUND3_KEPT = round3.KEPT / "step-000050"


def protocol() -> dict[str, Any]:
    return json.loads((HERE / "protocol.json").read_text())


def cell_protocol() -> dict[str, Any]:
    """The round-3 cell protocol with its SMC arm renamed ``ARM`` and scored by the declared
    value, Best-of-4 second (kept from the round-3 cell, not replayed)."""
    p = copy.deepcopy(round3.cell_protocol(ROUND3_KEPT))
    smc_name, bon_name = list(p["cell"]["arms"])
    smc = {**p["cell"]["arms"][smc_name], "value": protocol()["value"]}
    p["cell"]["arms"] = {ARM: smc, bon_name: p["cell"]["arms"][bon_name]}
    return p


def config(seed: int) -> dict[str, Any]:
    """The ``amc run`` configuration of one declared seed: the SMC arm only."""
    cfg = cell_config(cell_protocol(), seed, RUNS / f"seed{seed}")
    cfg["methods"] = [ARM]
    return cfg


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--seed", type=int, required=True, help="the declared seed to play")
    ap.add_argument("--keep-only", action="store_true", help="only keep finished results")
    a = ap.parse_args(argv)
    return play_and_keep(
        lambda: config(a.seed), RUNS / f"seed{a.seed}.yaml",
        lambda: f"kept {keep_gz(RUNS.glob('seed*/*__seed*.jsonl'), EVIDENCE)} records",
        a.keep_only, "--seed")


if __name__ == "__main__":
    raise SystemExit(main())
