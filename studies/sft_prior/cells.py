"""What every collection script of the fine-tuned prior's studies does: play one ``amc run``
configuration (resumable: finished (task, seed) results survive a restart) and keep its
finished seed files, gzipped, as evidence."""

from __future__ import annotations

import gzip
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
