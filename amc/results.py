"""Crash-safe results: one JSON line per finished task, appended and fsynced immediately.

A run directory holds one file per (method, seed), ``<method>__seed<k>.jsonl``. A crash loses at
most the tasks in flight; re-running reads the file and skips the task ids already present
(resume). A torn last line (killed mid-write) is ignored and rewritten. Files are never
rewritten in place except by :func:`write_json_atomic` (write to a temp file, then rename).

A task that failed (its agent's endpoint failed for good, or it raised) is not a result: it goes
to ``<method>__seed<k>.failures.jsonl`` with its error, so the next run retries it. One run at
a time writes a (method, seed): :func:`lock_outputs` holds an exclusive ``flock`` on a lock file
next to each results file (the kernel releases it when the process ends, even on ``kill -9``).

Every JSON writer here masks secrets first (:func:`amc.errors.mask_json`): an endpoint that
echoes the API key in an answer must not get it written into results or DVC-tracked files. And
every one writes strict JSON (:func:`strict`): a number that is not finite (an undefined
detectable effect, say) is ``null``, never Python's ``NaN``, which strict parsers refuse.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import re
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from amc.errors import mask_json

_lock = threading.Lock()


def results_path(out_dir: str | Path, method: str, seed: int) -> Path:
    """The results file of one (method, seed) in ``out_dir``."""
    safe = re.sub(r"[^A-Za-z0-9_.@+-]", "_", method)
    return Path(out_dir) / f"{safe}__seed{seed}.jsonl"


def failures_path(out_dir: str | Path, method: str, seed: int) -> Path:
    """The failed-tasks file of one (method, seed) in ``out_dir`` (next to its results)."""
    res = results_path(out_dir, method, seed)
    return res.with_name(res.name.removesuffix(".jsonl") + ".failures.jsonl")


TIMING = "timing"
"""Subfolder of a results folder for wall times: measurements of a run, not of its samples, so
they stay out of the results lines (whose bytes a rerun reproduces) and out of DVC's hashes
(``.dvcignore``)."""


def timing_path(out_dir: str | Path, method: str, seed: int) -> Path:
    """The wall-time file of one (method, seed): ``<out_dir>/timing/<results file name>``,
    one ``{task_id, wall_s}`` line per task as it finishes."""
    res = results_path(out_dir, method, seed)
    return res.parent / TIMING / res.name


DAMAGED = ("the file is damaged: delete that line (or move the file away; its tasks then "
           "rerun) and run again")


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, record)`` of a JSON-lines file of objects; a torn last line is skipped.

    A corrupt line elsewhere (not UTF-8, not JSON, not an object) is a ``ValueError`` naming
    ``file:line`` and what to do.
    """
    p = Path(path)
    if not p.exists():
        return
    lines = p.read_bytes().split(b"\n")
    while lines and not lines[-1].strip():
        lines.pop()
    for k, raw in enumerate(lines):
        if not raw.strip():
            continue
        try:
            rec = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            if k == len(lines) - 1:
                return  # torn write from a crash; the task reruns
            what = "not UTF-8 text" if isinstance(err, UnicodeDecodeError) else "not JSON"
            raise ValueError(f"{p}:{k + 1}: corrupt results line ({what}); {DAMAGED}") from None
        if not isinstance(rec, dict):
            raise ValueError(f"{p}:{k + 1}: results line is a {type(rec).__name__}, not an "
                             f"object; {DAMAGED}")
        yield k + 1, rec


def read_jsonl(path: str | Path) -> Iterator[dict[str, Any]]:
    """Records of a JSON-lines file of objects (see :func:`iter_jsonl`)."""
    for _, rec in iter_jsonl(path):
        yield rec


def iter_task_records(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, record)`` of a results file, one record per task: a task recorded
    twice (the same line again, or a conflicting one) is a ``ValueError`` naming
    ``file:line`` of the second, so no reader counts a task twice or keeps one of two
    different answers silently. Lines without ``task_id`` are passed through."""
    first: dict[str, tuple[int, dict[str, Any]]] = {}
    for line, rec in iter_jsonl(path):
        if "task_id" in rec:
            tid = str(rec["task_id"])
            if tid in first:
                k, seen = first[tid]
                how = "again" if seen == rec else "with a different result"
                raise ValueError(f"{path}:{line}: task {tid!r} is recorded twice (line {k}, "
                                 f"then {how}); {DAMAGED}")
            first[tid] = (line, rec)
        yield line, rec


def read_task_records(path: str | Path) -> Iterator[dict[str, Any]]:
    """Records of a results file, refusing a task recorded twice (:func:`iter_task_records`)."""
    for _, rec in iter_task_records(path):
        yield rec


def repair_tail(path: str | Path) -> None:
    """Drop a torn last line left by a crash, so appends start on a fresh line."""
    p = Path(path)
    if not p.exists():
        return
    data = p.read_bytes()
    if data and not data.endswith(b"\n"):
        cut = data.rfind(b"\n") + 1
        with open(p, "r+b") as f:
            f.truncate(cut)


def strict(obj: Any) -> Any:
    """``obj`` with every non-finite float (NaN, ±inf) as None: JSON has neither, and strict
    parsers refuse Python's ``NaN`` / ``Infinity`` tokens."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: strict(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [strict(v) for v in obj]
    return obj


def dumps(obj: Any, **kw: Any) -> str:
    """Strict JSON text of ``obj`` (:func:`strict`; every writer of this module uses it)."""
    return json.dumps(strict(obj), allow_nan=False, **kw)


def append_jsonl(path: str | Path, record: dict[str, Any]) -> None:
    """Append one record as a line and fsync it (thread-safe within the process)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    line = mask_json(dumps(record, separators=(",", ":"))) + "\n"
    with _lock, open(p, "a") as f:
        f.write(line)
        f.flush()
        os.fsync(f.fileno())


class OutputInUse(ValueError):
    """Another process (or task) is writing the same results file."""


def check_writable(out_dir: str | Path) -> Path:
    """Create ``out_dir`` if needed and prove a file can be written there (before any work)."""
    p = Path(out_dir)
    try:
        p.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=p, prefix=".write-test.")
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        raise ValueError(f"cannot write results to {p}: {err.strerror or err}") from None
    return p


def folder_problem(folder: str | Path) -> str | None:
    """Why no file could be written in ``folder`` (created if missing), or ``None``.

    Proved by creating the folders and a probe file, then removing what was created: nothing
    is left behind either way (a name too long, ``/proc``, a read-only disk, a plain file)."""
    made: list[Path] = []
    p = Path(folder).absolute()
    try:
        missing = []
        while not p.is_dir():
            if p.exists() or p == p.parent:
                return f"{p} is not a folder"
            missing.append(p)
            p = p.parent
        for d in reversed(missing):
            os.mkdir(d)
            made.append(d)
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".write-test.")
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        return err.strerror or str(err)
    finally:
        for d in reversed(made):
            with contextlib.suppress(OSError):
                os.rmdir(d)
    return None


@contextlib.contextmanager
def lock_outputs(paths: Sequence[Path]) -> Iterator[None]:
    """Hold an exclusive, non-blocking ``flock`` on ``.<name>.lock`` next to each path.

    Raises :class:`OutputInUse` at once if another holder exists (another ``amc run`` on the
    same ``--out``, or two workers given the same unit). Locks drop when the block ends or the
    process dies (even by ``kill -9``: the kernel releases them). A clean exit removes the lock
    files, so they do not linger in (DVC-tracked) output folders.
    """
    with contextlib.ExitStack() as stack:
        for path in paths:
            _lock_one(stack, path.with_name(f".{path.name}.lock"), path)
        yield


def _lock_one(stack: contextlib.ExitStack, lock: Path, path: Path) -> None:
    """Lock ``lock`` for ``path`` on ``stack`` (released and removed when the stack closes)."""
    while True:
        f = open(lock, "a+")  # noqa: SIM115 -- kept open on the stack once locked
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "another process"
            f.close()
            raise OutputInUse(f"{path} is being written by {holder}; wait for that run or "
                              "use another --out") from None
        try:  # the previous holder may have removed the file between our open and lock
            same = os.stat(lock).st_ino == os.fstat(f.fileno()).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        f.close()
    stack.enter_context(f)
    f.truncate(0)
    f.write(f"pid {os.getpid()}\n")
    f.flush()
    stack.callback(lock.unlink, missing_ok=True)  # runs before the close: still locked


_UMASK_LOCK = threading.Lock()


def current_umask() -> int:
    """The process's umask, read without changing it where Linux shows it (``/proc``);
    elsewhere set and restored at once, under a lock."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except OSError:
        pass
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def write_bytes_atomic(path: str | Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` via a temp file, fsync and an atomic rename.

    Readers (DVC, the next stage, a concurrent report) see the old file or the new one, never
    half of one.
    """
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~current_umask())  # mkstemp's 0600 is not what open() gives
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: str | Path, obj: Any) -> None:
    """Write JSON atomically (see :func:`write_bytes_atomic`)."""
    text = mask_json(dumps(obj, indent=2, sort_keys=True))
    write_bytes_atomic(path, (text + "\n").encode())


def write_jsonl_atomic(path: str | Path, records: Iterable[dict[str, Any]]) -> None:
    """Replace ``path`` with one JSON line per record, atomically."""
    body = "".join(dumps(r, separators=(",", ":")) + "\n" for r in records)
    write_bytes_atomic(path, mask_json(body).encode())


def sort_task_records(path: str | Path, order: Sequence[str]) -> None:
    """Rewrite a results file (atomically) with its lines in ``order`` of their ``task_id``
    (ids not in ``order`` last, as they were), so its bytes do not depend on which task
    finished first; a file already in order is left as it is."""
    p = Path(path)
    if not p.is_file():
        return
    recs = list(read_jsonl(p))
    rank = {str(t): i for i, t in enumerate(order)}
    ordered = sorted(recs, key=lambda r: rank.get(str(r.get("task_id")), len(rank)))
    if ordered != recs:
        write_jsonl_atomic(p, ordered)


SESSIONS = "sessions.jsonl"


def record_session(out_dir: str | Path, started: float, status: str) -> None:
    """Append one invocation's wall time to ``<out_dir>/timing/sessions.jsonl``.

    A resumable stage may be completed over several sittings; the sum of its sessions is the
    wall time the results took. ``started`` is a ``time.time()`` stamp (seconds).
    """
    now = time.time()
    append_jsonl(Path(out_dir) / TIMING / SESSIONS, {
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "wall_s": round(now - started, 3), "status": status})


def sessions_wall(out_dir: str | Path) -> tuple[float, int]:
    """``(total wall seconds, number of sessions)`` recorded in ``out_dir``."""
    rows = [*read_jsonl(Path(out_dir) / SESSIONS),  # where folders before issue 63 kept them
            *read_jsonl(Path(out_dir) / TIMING / SESSIONS)]
    return float(sum(r["wall_s"] for r in rows)), len(rows)
