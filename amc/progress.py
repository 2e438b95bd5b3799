"""Progress of long work where its user can see it: a bar on a terminal, lines in a log.

Under ``dvc repro`` in a terminal a tqdm bar on stderr redraws in place; when stderr is a pipe
or a file (a CI log, ``make run 2>&1 | tee``, a Prefect worker) a bar's carriage returns make
one unreadable line, so :class:`LineProgress` prints a plain line instead -- done/total, the
elapsed time and the ETA -- when a task finishes (at most every ``every_s`` seconds), once at
the end, and, with ``heartbeat``, every ``every_s`` seconds while nothing finishes (tasks run
concurrently and can all take minutes).
:func:`progress_bar` picks one; both have tqdm's ``update`` / ``close``.

Inside a pipeline stage or flow only these are wanted: :func:`quiet_libraries` turns off the
libraries' own bars and chatter (datasets' ``Saving the dataset``, transformers' ``Loading
weights``, MLflow's ``Downloading artifacts``, ``Validating input example``, ``Successfully
registered model``); their warnings still show.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TextIO

from tqdm.auto import tqdm


class LineProgress:
    """tqdm-like counter that prints ``desc: k/N unit, elapsed, ETA`` lines."""

    def __init__(self, total: int, initial: int = 0, desc: str = "", unit: str = "task", *,
                 every_s: float = 30.0, file: TextIO | None = None,
                 clock: Callable[[], float] = time.monotonic, heartbeat: bool = False) -> None:
        self.total, self.n, self.start_n = total, initial, initial
        self.desc, self.unit, self.every_s = desc, unit, every_s
        self.file, self.clock = file or sys.stderr, clock
        self.t0 = self.last = clock()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        if heartbeat and initial < total:
            threading.Thread(target=self._beat, daemon=True).start()

    def _beat(self) -> None:
        while not self._stop.wait(self.every_s):
            with self._lock:
                if self.clock() - self.last >= self.every_s:
                    self.last = self.clock()
                    print(self.line(), file=self.file, flush=True)

    def line(self) -> str:
        """The current progress line."""
        elapsed = self.clock() - self.t0
        done_here = self.n - self.start_n
        eta = (f"ETA {elapsed / done_here * (self.total - self.n):.0f} s" if done_here
               else "ETA unknown")
        return f"{self.desc}: {self.n}/{self.total} {self.unit}s, {elapsed:.0f} s, {eta}"

    def update(self, n: int = 1) -> None:
        with self._lock:
            self.n += n
            now = self.clock()
            if now - self.last >= self.every_s or self.n >= self.total:
                self.last = now
                print(self.line(), file=self.file, flush=True)

    def close(self) -> None:
        self._stop.set()


def progress_bar(total: int, initial: int, desc: str, *, enabled: bool,
                 unit: str = "task", file: TextIO | None = None) -> Any:
    """A tqdm bar on a terminal, :class:`LineProgress` elsewhere, a silent one if disabled."""
    out = file or sys.stderr
    if enabled and not out.isatty():
        return LineProgress(total, initial, desc, unit, file=out, heartbeat=True)
    return tqdm(total=total, initial=initial, desc=desc, unit=unit, file=out,
                disable=not enabled, leave=False)


QUIET_ENV = {"HF_HUB_DISABLE_PROGRESS_BARS": "1", "HF_DATASETS_DISABLE_PROGRESS_BARS": "1",
             "TRANSFORMERS_VERBOSITY": "error", "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false",
             "MLFLOW_LOGGING_LEVEL": "WARNING"}
"""Read by the libraries when they are imported (or, for MLflow's bar, when they download)."""


def quiet_libraries() -> None:
    """The libraries' progress bars and info chatter off in this process (idempotent): the
    environment for those imported later, their switches for those already imported.
    (MLflow prints registrations past its log level: :func:`quiet_stderr` around them.)"""
    for k, v in QUIET_ENV.items():
        os.environ.setdefault(k, v)
    if "datasets" in sys.modules:
        sys.modules["datasets"].disable_progress_bars()
    if "huggingface_hub" in sys.modules:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    if "transformers" in sys.modules:
        sys.modules["transformers"].utils.logging.disable_progress_bar()
    logging.getLogger("mlflow").setLevel(logging.WARNING)  # if it was imported already


@contextlib.contextmanager
def quiet_stderr() -> Iterator[None]:
    """Drop what a library call prints to stderr (MLflow's ``Successfully registered model``,
    ``Created version``, printed whatever its log level)."""
    with contextlib.redirect_stderr(io.StringIO()):
        yield
