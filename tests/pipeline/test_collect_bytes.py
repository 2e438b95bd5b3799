"""A collect rerun with the same params writes the same bytes, whatever its concurrency.

The results lines are in task order (not in the order tasks finished) and carry no wall time
(it goes to ``timing/``, which ``.dvcignore`` keeps out of DVC's hashes), so ``dvc repro`` of
collect reproduces ``data/trajectories`` and its ``dvc.lock`` hash.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml

from amc.pipeline.collect import collect, merge_shards
from amc.pipeline.params import load_params
from amc.results import TIMING

ROOT = Path(__file__).resolve().parents[2]
PARAMS = {"env": {"name": "synthetic", "options": {"n_train": 12, "depth": 4}},
          "collect": {"max_tasks": 12, "rollouts": 4}}


def hashed_files(folder: Path) -> dict[str, bytes]:
    """The files DVC hashes in ``folder``: all but the wall times of ``timing/``."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and TIMING not in p.relative_to(folder).parts}


def collect_with(tasks: int, particles: int) -> dict[str, bytes]:
    out = Path("data/trajectories")
    shutil.rmtree(out, ignore_errors=True)
    params = {**PARAMS, "collect": {**PARAMS["collect"], "max_concurrent_tasks": tasks,
                                    "max_concurrent_particles": particles}}
    Path("params.yaml").write_text(yaml.safe_dump(params))
    assert collect(load_params("params.yaml"), progress=False).complete
    return hashed_files(out)


def test_a_rerun_at_another_concurrency_writes_the_same_bytes(workdir: Path) -> None:
    parallel = collect_with(tasks=6, particles=16)
    timing = Path("data/trajectories/timing/bon@4__seed0.jsonl").read_text().splitlines()
    finished = [json.loads(line)["task_id"] for line in timing]
    serial = collect_with(tasks=1, particles=1)
    lines = [json.loads(x) for x in parallel["bon@4__seed0.jsonl"].splitlines()]
    assert sorted(parallel) == ["bon@4__seed0.jsonl", "manifest.json"]
    assert finished != [r["task_id"] for r in lines]  # the tasks did finish out of order ...
    assert parallel["bon@4__seed0.jsonl"] == serial["bon@4__seed0.jsonl"]  # ... same bytes
    assert sorted(finished) == sorted(r["task_id"] for r in lines)
    assert all("wall_s" not in r for r in lines)  # a measurement: kept in timing/ instead


def test_a_sharded_collect_merges_to_the_bytes_of_an_unsharded_one(workdir: Path) -> None:
    whole = collect_with(tasks=2, particles=8)
    shutil.rmtree("data/trajectories")
    p = load_params("params.yaml")
    for k in (1, 0):  # the second shard first: its tasks land first in the merged file
        collect(p, shard=(k, 2), progress=False)
    assert merge_shards(p).complete
    assert hashed_files(Path("data/trajectories")) == whole
    timing = Path("data/trajectories/timing/bon@4__seed0.jsonl").read_text().splitlines()
    assert len(timing) == 12  # the shards' wall times are kept


def test_dvc_ignores_the_wall_times() -> None:
    assert f"{TIMING}/" in (ROOT / ".dvcignore").read_text().splitlines()
