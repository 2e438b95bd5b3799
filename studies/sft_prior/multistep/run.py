"""Play the declared multi-step cell (``protocol.json``), one seed per process, and keep it.

    python -m studies.sft_prior.multistep.run --seed S [--keep-only]

``amc run`` plays both arms (SMC resampling after steps 2, 4, 6 with the Monte-Carlo rollout
value, and Best-of-4) on the 30 validation tasks with the DAgger checkpoint served in
bfloat16, into ``runs/sft-multistep/seedS`` (finished (task, method, seed) results survive a
restart); the finished seed files are gzipped into ``evidence/sft-prior/multistep/``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from studies.sft_prior.cells import keep_gz, play_and_keep

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
RUNS = REPO / "runs/sft-multistep"
EVIDENCE = REPO / "evidence/sft-prior/multistep"


def protocol() -> dict[str, Any]:
    return json.loads((HERE / "protocol.json").read_text())


def config(seed: int) -> dict[str, Any]:
    """The ``amc run`` configuration of one declared seed."""
    p = protocol()
    cell = p["cell"]
    if seed not in cell["seeds"]:
        raise ValueError(f"seed {seed} is not declared ({cell['seeds']})")
    smc = cell["arms"]["smc@4+rollout"]
    return {
        "env": {"name": "textcraft", "options": cell["env_options"]},
        "prior": {"name": p["prior"]["name"], "options": p["prior"]["options"]},
        "smc": {"max_steps": cell["horizon"], "beta": smc["beta"], "resample": smc["resample"],
                "resample_steps": smc["resample_steps"], "success_threshold": 1.0},
        "values": {"rollout": smc["value"]},
        "methods": list(cell["arms"]), "task_ids": cell["tasks"], "seeds": [seed],
        "max_concurrent_tasks": 1,
        "out_dir": str((RUNS / f"seed{seed}").relative_to(REPO)),
    }


def keep_results() -> int:
    """Gzip every seed folder's complete result lines into the evidence folder."""
    return keep_gz(RUNS.glob("seed*/*__seed*.jsonl"), EVIDENCE)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, required=True, help="the declared seed to play")
    ap.add_argument("--keep-only", action="store_true", help="only keep finished results")
    a = ap.parse_args(argv)
    return play_and_keep(lambda: config(a.seed), RUNS / f"seed{a.seed}.yaml",
                         lambda: f"kept {keep_results()} records", a.keep_only, "--seed")

if __name__ == "__main__":
    raise SystemExit(main())
