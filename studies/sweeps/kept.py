"""The sweep's learned values kept in git, so a fresh clone's learned cells use the value that
ran, not a retrain.

The value stages' models (``models/value``, ``models/value-webshop``, ``models/value-sciworld``)
are DVC outputs, and this project has no DVC remote: a fresh clone has their hashes in
``dvc.lock`` but not their files, so a learned cell would retrain the value first -- and a
retrain is not bit for bit the same on another machine, so it supersedes every learned cell
that ran (the cells record the value's content hash). These values are head-mode (frozen
MiniLM encoder), so their kept copy is under a MB (:mod:`studies.sweeps.keep_value`), committed
under ``sweeps/kept/<model folder name>/``.

    python -m studies.sweeps.kept keep --section value_sciworld  # after `dvc repro value_sciworld`
    python -m studies.sweeps.kept restore --section value_sciworld  # in a fresh clone

``restore`` checks with ``dvc status`` that only the stage's outputs are missing (its code
and params unchanged since the lock), rebuilds the model folder byte for byte (or fails), and
``dvc commit``s it into the local cache, from which queued experiments check it out. Run in
``sweeps/`` with the repository root on PYTHONPATH (as the stages are).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from studies.sweeps.config import load_sweep_params
from studies.sweeps.value import BENCH_SECTIONS, section

KEPT_DIR = Path("kept")
"""Where the kept copies live, relative to ``sweeps/``."""


def model_dir(name: str) -> Path:
    """The model folder of value section (= stage) ``name``."""
    return Path(section(load_sweep_params(), name)[0].out_dir)


def kept_dir(name: str) -> Path:
    return KEPT_DIR / model_dir(name).name


def dvc(*args: str) -> str:
    proc = subprocess.run(["dvc", *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"dvc {' '.join(args)} failed: {proc.stderr.strip()[-500:]}")
    return proc.stdout


def stale_part(status: list[Any]) -> list[Any]:
    """What of a stage's ``dvc status --json`` entry is more than its outputs being absent."""
    out = []
    for item in status:
        if isinstance(item, dict) and set(item) == {"changed outs"}:
            rest = {k: v for k, v in item["changed outs"].items()
                    if v not in ("deleted", "not in cache")}
            if rest:
                out.append({"changed outs": rest})
        else:
            out.append(item)
    return out


def restore_stage(name: str) -> str:
    """Restore stage ``name``'s model from its kept copy into the local DVC cache; returns
    what was done. A model folder already there is left alone."""
    from studies.sweeps.keep_value import restore

    out = model_dir(name)
    if out.exists():
        return f"{out}: present, nothing restored"
    if not kept_dir(name).is_dir():
        raise FileNotFoundError(f"no kept copy of {out} at {kept_dir(name)}: `dvc repro {name}`"
                                f" trains it, then `python -m studies.sweeps.kept keep --section "
                                f"{name}` keeps it")
    stale = stale_part(json.loads(dvc("status", "--json", name) or "{}").get(name, []))
    if stale:
        raise RuntimeError(f"stage {name} changed since its lock ({stale}): its kept value is "
                           f"not what the stage would make now; `dvc repro {name}` retrains")
    restore(kept_dir(name), out)
    dvc("commit", "--force", name)
    return f"{out}: restored from {kept_dir(name)} and committed to the DVC cache"


def main(argv: list[str] | None = None) -> int:
    from studies.sweeps.keep_value import keep

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("action", choices=("keep", "restore"))
    ap.add_argument("--section", choices=("value", *BENCH_SECTIONS), default="value")
    args = ap.parse_args(argv)
    try:
        if args.action == "keep":
            src = model_dir(args.section)
            print(f"kept {src} as {keep(src, kept_dir(args.section))}")
        else:
            print(restore_stage(args.section))
    except (FileNotFoundError, ValueError, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
