"""Sqlite response cache: a rerun with the same seed makes no calls and reproduces results.

The key is a SHA-256 of ``(model, endpoint, full request, sample seed)``; the request
includes the prompt, every sampling parameter and the per-request seed the prior drew from the
particle's generator, so two particles never share an entry and a rerun with the same run seed
hits every entry. Only successful responses are stored (never errors). The API key is not part
of the request and never reaches the file.

Example::

    cache = ResponseCache(".cache/responses.sqlite")
    key = cache.key("gpt-4.1-mini", "chat", request, seed=123)
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

from amc.types import Usage

log = logging.getLogger("amc.priors")

SCHEMA = "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, text TEXT, usage TEXT)"


def default_cache_dir() -> Path:
    """``$AMC_CACHE`` if set, else ``.cache`` under the current directory."""
    return Path(os.environ.get("AMC_CACHE", ".cache"))


class ResponseCache:
    """A small key -> (text, usage) store; safe to share between tasks of one process."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        # timeout: wait for another process's write lock (parallel evaluation workers).
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None,
                                   timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(SCHEMA)
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(model: str, endpoint: str, request: dict[str, Any], seed: int) -> str:
        """Stable digest of everything that determines a sample."""
        blob = json.dumps(
            {"model": model, "endpoint": endpoint, "request": request, "seed": seed},
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
        except sqlite3.Error as err:  # a cache must never fail a proposal
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
                    (key, text, json.dumps(usage.to_dict())),
                )
        except sqlite3.Error as err:
            log.warning("response cache write failed: %s", err)

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
