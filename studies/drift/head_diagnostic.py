"""Does a head trained on a prior score the states that prior makes good higher? Train tasks only.

The diagnostic behind the feedback search's second regime (``studies/drift/feedback.py``):
regime 1's retrained 1-layer head did not recover the stale head's fall, so is the reaction
to an inventory listing learnable by that head at all? One round (collect, dataset, train) of
the drift demo's params with the given prior options, in a temp dir; then fresh rollouts of
train tasks the round's collection did not use (``TASKS``, a seeded generator), and the
head's mean score and the realised success of their states at each resampling step, split by
whether the history holds a listing. Nothing here touches a test task.

``python -m studies.drift.head_diagnostic PRIOR_JSON [OVERRIDES_JSON] [out.json]``
(default ``evidence/drift/head-diagnostic.json``, one entry per (prior, overrides), replaced
when rerun).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from studies.drift.candidates import train_round
from studies.drift.demo import demo_params
from studies.drift.feedback import listed, prefix, rollouts
from studies.drift.subtask import Options, merge

TASKS = slice(64, 112)
"""Train tasks the round's collection (its first 64) did not use."""
ROLLOUTS, SEED = 8, 123


async def _scores(data: dict[str, Any], opts: Options, uri: str) -> list[dict[str, Any]]:
    from amc.registry import VALUES

    smc = data["smc"]
    value = VALUES.build("learned", {"model": uri}, beta=smc["beta"], env_name="textcraft",
                         env_options=data["env"]["options"])
    runs = await rollouts(opts, TASKS, ROLLOUTS, SEED)
    # (step, listed, success, state) of every state at a resampling step
    rows = [(t, listed(prefix(h, t)), float(h.done), prefix(h, t))
            for h in runs for t in smc["resample_steps"] if h.t >= t]
    f = await value.score([r[3] for r in rows])
    await value.aclose()
    out = []
    for t in smc["resample_steps"]:
        for lst in (True, False):
            sel = [(fi, r) for fi, r in zip(f, rows, strict=True) if r[:2] == (t, lst)]
            out.append({"step": t, "listed": lst, "states": len(sel),
                        "head_mean": float(np.mean([x for x, _ in sel])) if sel else None,
                        "success": float(np.mean([r[2] for _, r in sel])) if sel else None})
    return out


def diagnose(opts: Options, over: Options) -> dict[str, Any]:
    """Train one head on the prior with ``opts`` (the demo's params with ``over``) in a temp
    dir and score fresh train-task states with it."""
    here = Path.cwd()
    with tempfile.TemporaryDirectory(prefix="drift-head-") as tmp:
        os.chdir(tmp)
        try:
            data = demo_params(scale="measure")
            merge(data, over)
            Path("params.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
            uri = train_round(Path(tmp) / "params.yaml", opts)
            by_state = asyncio.run(_scores(data, opts, uri))
        finally:
            os.chdir(here)
    return {"prior": opts, "overrides": over, "tasks": [TASKS.start, TASKS.stop],
            "rollouts": ROLLOUTS, "seed": SEED, "by_state": by_state}


def main(argv: list[str]) -> None:
    opts = json.loads(argv[0])
    over = json.loads(argv[1]) if len(argv) > 1 else {}
    out = Path(argv[2] if len(argv) > 2 else "evidence/drift/head-diagnostic.json")
    entry = diagnose(opts, over)
    entries = json.loads(out.read_text()) if out.is_file() else []
    entries = [e for e in entries if (e["prior"], e["overrides"]) != (opts, over)] + [entry]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(entries, indent=1) + "\n")
    print(json.dumps(entry["by_state"]))


if __name__ == "__main__":
    main(sys.argv[1:])
