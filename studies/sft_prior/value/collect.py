"""Collect the value protocol's training rollouts for the chosen regime, resumable, and keep them.

    python -m studies.sft_prior.value.collect [--keep-only]

Refuses while ``room.json`` has no chosen regime. Otherwise ``amc run`` plays the declared plan
of the chosen (depth, H) (``protocol.json`` ``training.plans``: Best-of-8 of the ``hf`` prior
with the chosen checkpoint's kept adapter, ``smc.max_steps = H``, the plan's tasks and seeds)
into ``runs/sft-value/step-NNNNNN/depthD`` (finished (task, method, seed) results are kept
across restarts), after checking the tasks against every reserved set; the finished seed
files are gzipped into ``evidence/sft-prior/value/train/step-NNNNNN/depthD/``, which
:mod:`.measure` reads.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from studies.sft_prior.cells import keep_gz, play
from studies.sft_prior.regime_search.run import KEPT, step_dir
from studies.sft_prior.value.protocol import (
    REPO,
    SEARCH_PROTOCOL,
    TRAIN,
    K,
    check_training_tasks,
    chosen_regime,
    plan,
)

RUNS = REPO / "runs/sft-value"


def folder(c: dict[str, Any], root: Path = TRAIN) -> Path:
    """Where the chosen regime's training rollouts are kept."""
    return root / step_dir(int(c["checkpoint"])) / f"depth{int(c['depth'])}"


def config(c: dict[str, Any], p: dict[str, Any]) -> dict[str, Any]:
    """The ``amc run`` configuration of the declared collection."""
    depth = int(c["depth"])
    check_training_tasks(p["tasks"], depth)
    adapter = KEPT / step_dir(int(c["checkpoint"]))
    if not (adapter / "adapter_config.json").is_file():
        raise SystemExit(f"refused: no kept adapter {adapter.relative_to(REPO)}")
    prior = json.loads(SEARCH_PROTOCOL.read_text())["prior"]["options"]
    return {
        "env": {"name": "textcraft", "options": {"reward": "binary", "min_depth": depth,
                                                 "max_depth": depth, "n_distractors": 10}},
        "prior": {"name": "hf", "options": {**prior,
                                            "adapter": str(adapter.relative_to(REPO))}},
        "smc": {"max_steps": int(c["horizon"]), "success_threshold": 1.0},
        "methods": [f"bon@{K}"], "task_ids": p["tasks"], "seeds": p["seeds"],
        "max_concurrent_tasks": 1,
        "out_dir": str(folder(c, RUNS).relative_to(REPO)),
    }


def keep(c: dict[str, Any]) -> int:
    """Gzip the finished seed files into the evidence folder; the records kept."""
    return keep_gz(folder(c, RUNS).glob(f"bon@{K}__seed*.jsonl"), folder(c))


def missing(c: dict[str, Any], p: dict[str, Any], root: Path = TRAIN) -> list[tuple[str, int]]:
    """The planned (task, seed) runs not kept yet (all of them when the folder is absent)."""
    from studies.llm_regime.regime_search.analyse import read_records

    f = folder(c, root)
    done = ({(str(r["task_id"]), int(r["seed"])) for r in read_records(f)} if f.is_dir()
            else set())
    return sorted({(t, int(s)) for t in p["tasks"] for s in p["seeds"]} - done)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep-only", action="store_true", help="only keep finished results")
    a = ap.parse_args(argv)
    c = chosen_regime()
    p = plan(c)
    if not a.keep_only:
        rc = play(config(c, p), folder(c, RUNS).with_suffix(".yaml"))
        if rc != 0:
            return rc
    print(f"kept {keep(c)} records; {len(missing(c, p))} planned (task, seed) runs missing")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
