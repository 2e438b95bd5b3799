"""Once means once: a declared run's result is written once.

A confirmatory run (or a declared test cell) is a claim that its protocol was run one time and
its result kept whatever it showed. Running it again and keeping the better outcome would turn
the declaration into a search. So a run's results live in one folder per run id
(:func:`run_dir`), and:

- a finished run (its ``DONE`` marker written) refuses to run again;
- an unfinished run resumes: the (task, seed) rows already kept are never rerun or rewritten,
  and the protocol must be the one it started with (its content hash is in the folder);
- a second run of the same protocol is a *replication*: it must be declared with its own id
  (``--replication NAME``), gets its own folder beside the first and is reported as one.

:class:`OnceError` carries the one-line reason; the runner prints it and exits 2.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

DONE = "DONE"
"""The marker a finished run writes (its content: the finish record)."""
STARTED = "started.json"
"""The run's first record: protocol id, its content hash, replication id."""
ROWS = "rows.jsonl"
"""One JSON line per finished (task, seed), appended as each lands."""
REPLICATIONS = "replications"
"""Subfolder of a protocol's results that holds its declared replications."""
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,40}$")


class OnceError(RuntimeError):
    """A declared run asked to run again without being declared a replication."""


def run_dir(results: Path, protocol_id: str, replication: str | None = None) -> Path:
    """The folder of one run: ``results/<protocol id>/`` or, for a declared replication,
    ``results/<protocol id>/replications/<name>/``."""
    base = results / protocol_id
    if replication is None:
        return base
    if not _NAME.match(replication):
        raise OnceError(f"replication id {replication!r}: lower-case letters, digits, - and _ "
                        "(at most 41 characters)")
    return base / REPLICATIONS / replication


def claim(folder: Path, protocol_id: str, protocol_hash: str,
          replication: str | None = None) -> dict[str, Any]:
    """Open ``folder`` for a run of the protocol, or refuse (:class:`OnceError`).

    Refuses a finished run, and an unfinished one started from another version of the
    protocol; otherwise writes (first time) or reads the start record and returns it."""
    who = f"{protocol_id}" + (f" replication {replication!r}" if replication else "")
    if (folder / DONE).is_file():
        hint = ("declare a new replication id" if replication
                else "declare it as a replication: --replication NAME")
        raise OnceError(f"{who} already has its result ({folder / DONE}); a declared run "
                        f"runs once: to run it again, {hint}")
    start = folder / STARTED
    if start.is_file():
        rec = json.loads(start.read_text())
        if rec["protocol_hash"] != protocol_hash:
            raise OnceError(f"{who} started under protocol {rec['protocol_hash'][:12]}, the "
                            f"file now hashes {protocol_hash[:12]}: a protocol changed after "
                            "its run began is not the declared one")
        return dict(rec)
    rec = {"protocol": protocol_id, "protocol_hash": protocol_hash, "replication": replication}
    folder.mkdir(parents=True, exist_ok=True)
    start.write_text(json.dumps(rec, indent=1, sort_keys=True) + "\n")
    return rec


def kept_rows(folder: Path) -> list[dict[str, Any]]:
    """The rows a run has kept so far (a torn last line, from a run cut off mid-write, is
    dropped: its (task, seed) reruns)."""
    path = folder / ROWS
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            break
    return rows


def keep_row(folder: Path, row: dict[str, Any]) -> None:
    """Append one finished (task, seed) row; a row already kept is never rewritten."""
    key = (str(row["task_id"]), int(row["seed"]))
    if any((str(r["task_id"]), int(r["seed"])) == key for r in kept_rows(folder)):
        raise OnceError(f"row {key} is already kept in {folder / ROWS}: rows are written once")
    path = folder / ROWS
    text = path.read_text() if path.is_file() else ""
    if text and not text.endswith("\n"):  # a torn last line: drop it before appending
        path.write_text(text[: text.rfind("\n") + 1])
    with path.open("a") as f:
        f.write(json.dumps(row, sort_keys=True) + "\n")


def finish(folder: Path, record: dict[str, Any]) -> None:
    """Mark the run finished (after its last declared row): it never runs again."""
    (folder / DONE).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
