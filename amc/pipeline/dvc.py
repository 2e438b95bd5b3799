"""The one way AMC calls DVC: serialised by a file lock, ``dvc commit -f <stage>`` to record.

DVC refuses a second process in one repository ("Unable to acquire lock") instead of waiting,
so every DVC call made by AMC -- a flow's task recording its stage, ``python -m
amc.pipeline.round`` after each stage -- holds :func:`dvc_lock` (``.dvc/tmp/amc-flows.lock``)
and queues there instead.
"""

from __future__ import annotations

import fcntl
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def dvc_lock(root: str | Path = ".") -> Iterator[None]:
    """Hold an exclusive file lock around a DVC call: one DVC process per repo at a time."""
    lock = Path(root) / ".dvc" / "tmp" / "amc-flows.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def run_dvc(args: Sequence[str], root: str | Path = ".") -> str:
    """Run ``dvc <args>`` serialised by :func:`dvc_lock`; returns stdout (error on failure)."""
    with dvc_lock(root):
        proc = subprocess.run(["dvc", *args], cwd=root, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"dvc {' '.join(args)} failed: {proc.stderr.strip()[-500:]}")
    return proc.stdout


def dvc_commit(stage: str, root: str | Path = ".") -> bool:
    """``dvc commit -f <stage>`` (under the lock) when ``root`` is a DVC project, else False."""
    if not (Path(root) / ".dvc").is_dir():
        return False
    run_dvc(["commit", "-f", stage], root)
    return True
