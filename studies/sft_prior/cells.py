"""What every collection script of the fine-tuned prior's studies does: play one ``amc run``
configuration (resumable: finished (task, seed) results survive a restart) and keep its
finished seed files, gzipped, as evidence."""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]


def play(cfg: dict[str, Any], path: Path) -> int:
    """Write ``cfg`` to ``path`` and run ``amc run -c path`` from the repository root; its
    exit status."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return subprocess.call([sys.executable, "-m", "amc", "run", "-c", str(path)], cwd=REPO)


def keep_gz(files: Iterable[Path], dst: Path) -> int:
    """Gzip each seed file's complete lines (a live run's torn last line is left out) into
    ``dst`` under the same name plus ``.gz`` (mtime 0: same lines, same bytes); the lines kept."""
    dst.mkdir(parents=True, exist_ok=True)
    n = 0
    for f in sorted(files):
        lines = [x for x in f.read_text().splitlines(keepends=True) if x.endswith("\n")]
        n += len(lines)
        with gzip.GzipFile(dst / (f.name + ".gz"), "wb", mtime=0) as out:
            out.write("".join(lines).encode())
    return n


def cell_config(p: dict[str, Any], seed: int, out_dir: Path) -> dict[str, Any]:
    """The ``amc run`` configuration of one declared seed of a cell protocol ``p``: its prior,
    environment, tasks and horizon; the one SMC arm's resampling schedule, beta and value (the
    other arms, Best-of-N, resample ``never``). A seed the protocol does not declare is a
    ValueError."""
    cell = p["cell"]
    if seed not in cell["seeds"]:
        raise ValueError(f"seed {seed} is not declared ({cell['seeds']})")
    (name, smc), = ((k, a) for k, a in cell["arms"].items() if a["resample"] != "never")
    key = name.partition("+")[2]  # smc@N+KEY picks values[KEY]
    return {
        "env": {"name": "textcraft", "options": cell["env_options"]},
        "prior": {"name": p["prior"]["name"], "options": p["prior"]["options"]},
        "smc": {"max_steps": cell["horizon"], "beta": smc["beta"], "resample": smc["resample"],
                "resample_steps": smc["resample_steps"], "success_threshold": 1.0},
        "values": {key: smc["value"]},
        "methods": list(cell["arms"]), "task_ids": cell["tasks"], "seeds": [seed],
        "max_concurrent_tasks": 1,
        "out_dir": str(out_dir.relative_to(REPO)),
    }


def play_and_keep(make_config: Callable[[], dict[str, Any]], path: Path,
                  keep: Callable[[], str], keep_only: bool, arg: str) -> int:
    """A collection script's body: play ``make_config()`` unless ``keep_only`` (a ValueError
    from it is a bad value of the option ``arg``: exit status 2), then keep what finished and
    print ``keep()``'s line; the exit status."""
    if not keep_only:
        try:
            cfg = make_config()
        except ValueError as e:
            print(f"error: {arg}: {e}", file=sys.stderr)
            return 2
        rc = play(cfg, path)
        if rc != 0:
            return rc
    print(keep())
    return 0


def cell_main(here: Path, runs: Path, evidence: Path, doc: str,
              argv: list[str] | None = None,
              make_config: Callable[[int], dict[str, Any]] | None = None) -> int:
    """The command line of a declared cell folder ``here`` (its ``protocol.json``): play one
    ``--seed`` into ``runs/seedS`` (resumable) unless ``--keep-only``, then gzip every seed
    folder's finished records into ``evidence``. ``make_config(seed)`` replaces
    :func:`cell_config` of the protocol where a cell plays less than its protocol's arms."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--seed", type=int, required=True, help="the declared seed to play")
    ap.add_argument("--keep-only", action="store_true", help="only keep finished results")
    a = ap.parse_args(argv)
    p = json.loads((here / "protocol.json").read_text())
    cfg = make_config or (lambda seed: cell_config(p, seed, runs / f"seed{seed}"))
    return play_and_keep(lambda: cfg(a.seed), runs / f"seed{a.seed}.yaml",
                         lambda: f"kept {keep_gz(runs.glob('seed*/*__seed*.jsonl'), evidence)} "
                                 "records", a.keep_only, "--seed")


def keep_or_check(folder: Path, r: dict[str, Any], md: str, check: bool) -> int:
    """A declared analysis's output: with ``check``, compare ``r`` with the kept
    ``folder/result.json`` (exit status 1 if it differs); else write result.json and
    ``md`` as result.md, and print ``md``."""
    text = json.dumps(r, indent=1, sort_keys=True) + "\n"
    if check:
        if not (folder / "result.json").exists():
            print("no result.json kept yet: nothing to compare")
            return 1
        same = (folder / "result.json").read_text() == text
        print("result.json recomputes exactly" if same else "result.json DIFFERS")
        return 0 if same else 1
    (folder / "result.json").write_text(text)
    (folder / "result.md").write_text(md)
    print(md)
    return 0


def analyse_main(argv: list[str] | None, doc: str, evidence: Path,
                 analyse: Callable[[], dict[str, Any]], markdown: Callable[[dict[str, Any]], str],
                 empty: str) -> int:
    """A declared analysis's command line: ``--check`` recomputes ``analyse()`` and compares
    it with ``evidence/result.json``; else writes it and ``markdown`` of it (``keep_or_check``).
    With no kept records in ``evidence`` it prints ``empty`` and writes nothing."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="recompute and compare, write nothing")
    a = ap.parse_args(argv)
    if not list(evidence.glob("*.jsonl.gz")):
        print(empty)
        return 0
    r = analyse()
    return keep_or_check(evidence, r, "" if a.check else markdown(r), a.check)
