"""Collect one (checkpoint, depth) cell of the declared search, resumable, and keep it.

    python -m studies.sft_prior.regime_search.run --step 100 --depth 2 [--keep-only]

1. the checkpoint's adapter is kept in git under ``sft/kept/textcraft/step-NNNNNN`` (copied
   from the SFT stage's ``sft/out/checkpoints`` the first time; refused if a kept copy
   differs from the stage's, which would mean another run);
2. ``amc run`` plays ``protocol.json``'s collection (Best-of-8, seeds 0 and 1, the validation
   tasks) with the ``hf`` prior and that adapter, into ``runs/sft-search/step-NNNNNN/depthD``
   (finished (task, method, seed) results are kept across restarts);
3. the finished seed files are gzipped into ``evidence/sft-prior/regime-search/step-NNNNNN/
   depthD/`` (what the analysis reads).
"""

from __future__ import annotations

import argparse
import filecmp
import json
import shutil
import sys
from pathlib import Path
from typing import Any

from studies.sft_prior.cells import keep_gz, play

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
STAGE = REPO / "sft/out/checkpoints"
KEPT = REPO / "sft/kept/textcraft"
EVIDENCE = REPO / "evidence/sft-prior/regime-search"
RUNS = REPO / "runs/sft-search"


def protocol() -> dict[str, Any]:
    return json.loads((HERE / "protocol.json").read_text())


def step_dir(step: int) -> str:
    return f"step-{step:06d}"


def keep_adapter(step: int) -> Path:
    """The kept adapter of checkpoint ``step`` (copied from the stage's output once)."""
    kept, made = KEPT / step_dir(step), STAGE / step_dir(step)
    files = ("adapter_model.safetensors", "adapter_config.json", "policy.json")
    if kept.is_dir():
        if made.is_dir() and any(not filecmp.cmp(kept / f, made / f, shallow=False)
                                 for f in files[:1]):
            raise SystemExit(f"error: {made} differs from the kept {kept}: another SFT run")
        return kept
    if not made.is_dir():
        raise SystemExit(f"error: checkpoint {made} does not exist yet (run the sft stage)")
    kept.mkdir(parents=True)
    for f in files:
        shutil.copy2(made / f, kept / f)
    return kept


def config(step: int, depth: int, adapter: Path | None = None) -> dict[str, Any]:
    """The ``amc run`` configuration of one cell (``adapter``: another run's kept checkpoint
    in place of this run's ``step``)."""
    p = protocol()
    col = p["collection"]
    adapter = keep_adapter(step) if adapter is None else adapter
    return {
        "env": {"name": "textcraft", "options": {"reward": "binary", "min_depth": depth,
                                                 "max_depth": depth, "n_distractors": 10}},
        "prior": {"name": "hf", "options": {**p["prior"]["options"],
                                            "adapter": str(adapter.relative_to(REPO))}},
        "smc": {"max_steps": col["max_steps"][str(depth)], "success_threshold": 1.0},
        "methods": [col["method"]], "task_ids": col["tasks"][str(depth)],
        "seeds": col["seeds"], "max_concurrent_tasks": 1,
        "out_dir": str((RUNS / step_dir(step) / f"depth{depth}").relative_to(REPO)),
    }


def keep_results(step: int, depth: int) -> int:
    """Gzip the cell's seed files into the evidence folder; returns the records kept."""
    src = RUNS / step_dir(step) / f"depth{depth}"
    return keep_gz(src.glob("bon@*__seed*.jsonl"),
                   EVIDENCE / step_dir(step) / f"depth{depth}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--step", type=int, required=True)
    ap.add_argument("--depth", type=int, required=True)
    ap.add_argument("--keep-only", action="store_true", help="only keep finished results")
    a = ap.parse_args(argv)
    p = protocol()["candidates"]
    if a.step not in p["checkpoint"] or a.depth not in p["depth"]:
        print(f"error: --step/--depth: not a declared cell ({p['checkpoint']}, {p['depth']})",
              file=sys.stderr)
        return 2
    if not a.keep_only:
        rc = play(config(a.step, a.depth), RUNS / step_dir(a.step) / f"depth{a.depth}.yaml")
        if rc != 0:
            return rc
    print(f"kept {keep_results(a.step, a.depth)} records of {step_dir(a.step)} depth {a.depth}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
