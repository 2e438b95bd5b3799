"""Sqlite response cache: a rerun with the same seed makes no calls and reproduces results.

The key is a SHA-256 of ``(server, model, endpoint kind, full request, sample seed)``: the
server is the endpoint's base URL (or, for a server the prior starts itself on a free port,
what it serves, e.g. ``embedded:gemma-3-270m@python``), so one server's answers are never
replayed for another -- a dead endpoint or one that refuses the key fails instead of
answering from the cache. The request includes the prompt, every sampling parameter and the
per-request seed the prior drew from the particle's generator, so two particles never share an
entry and a rerun with the same run seed hits every entry. Only successful responses are
stored (never errors). The API key is not part of the key and never reaches the file: a stored
text is masked (:func:`amc.errors.mask_secrets`), so an endpoint echoing the key stores ``***``.
A cache path that cannot hold the database (a folder, a file that is not SQLite, a read-only or
virtual filesystem) is refused before a run starts (:func:`cache_problem`).

Example::

    cache = ResponseCache(".cache/responses.sqlite")
    key = cache.key("gpt-4.1-mini", "chat", request, seed=123, server="https://api.openai.com/v1")
    cache.get(key) or cache.put(key, text, usage)
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from amc.errors import mask_secrets
from amc.results import folder_problem
from amc.types import Usage

log = logging.getLogger("amc.priors")

SCHEMA = "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, text TEXT, usage TEXT)"


KEY_VERSION = 2
"""Bumped when the key's contents change (2: the server joined it), so no entry written under
an older key is ever read as an answer to a new one."""


def server_id(url: str) -> str:
    """An endpoint's identity: scheme and host lower-cased, no trailing slash
    (``HTTP://Host:8000/v1/`` and ``http://host:8000/v1`` are one server)."""
    parts = urlsplit(url.strip())
    if not parts.scheme:
        return url.strip().rstrip("/")
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path.rstrip("/"),
                       parts.query, ""))


def default_cache_dir() -> Path:
    """``$AMC_CACHE`` if set, else ``.cache`` under the current directory."""
    return Path(os.environ.get("AMC_CACHE", ".cache"))


SQLITE_HEADER = b"SQLite format 3\x00"


def cache_problem(path: str | Path) -> str | None:
    """Why ``path`` cannot be the response cache's database, or ``None`` (nothing written)."""
    p = Path(path)
    try:
        if p.is_dir():
            return f"{p} is a folder, not a cache file"
        if p.exists():
            if not p.is_file():
                return f"{p} is not a regular file"
            with open(p, "rb") as f:
                head = f.read(len(SQLITE_HEADER))
            if head and head != SQLITE_HEADER:
                return f"{p} exists and is not an SQLite database (point the cache elsewhere)"
            if not os.access(p, os.W_OK):
                return f"{p} is not writable"
    except OSError as err:
        return f"cannot read {p}: {err.strerror or err}"
    why = folder_problem(p.parent)  # SQLite writes its journal next to the file
    return None if why is None else f"cannot create {p}: {why}"


class ResponseCache:
    """A small key -> (text, usage) store; safe to share between tasks of one process."""

    def __init__(self, path: str | Path) -> None:
        """Check ``path`` now (a refusal names it); the file is created at the first call,
        so a run refused after its prior was built leaves no cache behind (issue 64)."""
        self.path = Path(path)
        why = cache_problem(self.path)
        if why is not None:
            raise ValueError(f"response cache: {why}")
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self.hits = 0
        self.misses = 0

    @property
    def _db(self) -> sqlite3.Connection:
        """The database, opened (and made) on first use; call with the lock held."""
        if self._conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # timeout: wait for another process's write lock (parallel evaluation workers)
            db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None,
                                 timeout=30)
            db.execute("PRAGMA journal_mode=WAL")
            # no fsync per write (an entry lost to a power cut is only asked again): FULL
            # blocked the event loop ~3 ms per call (docs/benchmarks.md, issue 55)
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute(SCHEMA)
            self._conn = db
        return self._conn

    @staticmethod
    def key(model: str, endpoint: str, request: dict[str, Any], seed: int, *,
            server: str) -> str:
        """Stable digest of everything that determines a sample (``server``: the endpoint's
        identity, :func:`server_id`)."""
        blob = json.dumps(
            {"v": KEY_VERSION, "server": server_id(server), "model": model,
             "endpoint": endpoint, "request": request, "seed": seed},
            sort_keys=True, separators=(",", ":"), default=str,
        )
        return hashlib.sha256(blob.encode()).hexdigest()

    def get(self, key: str) -> tuple[str, Usage] | None:
        """The stored text and original usage, or ``None`` (also when the file is unusable)."""
        try:
            with self._lock:
                row = self._db.execute(
                    "SELECT text, usage FROM responses WHERE key = ?", (key,)
                ).fetchone()
        except (sqlite3.Error, OSError) as err:  # a cache must never fail a proposal
            log.warning("response cache read failed: %s", err)
            row = None
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return row[0], Usage.from_dict(json.loads(row[1]))

    def put(self, key: str, text: str, usage: Usage) -> None:
        """Store a successful response (first write wins)."""
        try:
            with self._lock:
                self._db.execute(
                    "INSERT OR IGNORE INTO responses VALUES (?, ?, ?)",
                    (key, mask_secrets(text), json.dumps(usage.to_dict())),
                )
        except (sqlite3.Error, OSError) as err:
            log.warning("response cache write failed: %s", err)

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
