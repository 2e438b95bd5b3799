"""Once means once: a declared test cell's result is written once.

A test cell reports what a declared choice does on tasks no choice looked at; run it again (after
retraining the value, after a fix, because the first result disappointed) and the reported
number becomes the best of several tries. Issue 51 found exactly that in the committed evidence
(SciWorld's learned q 0.3 test cell twice, q 0.6 three times; WebShop's rollout cells
twice): harvest kept every run, under ``<name>--<experiment>.json``, but nothing stopped them.

So before a ``split: test`` cell runs, :func:`check_once` looks for its record among the
committed ones (``cell.evidence_dir``, ``evidence/runs`` from ``sweeps/``): the first run's
``<name>.json`` or a later run's ``<name>--<experiment>.json``. Found, the cell refuses, with the
one thing to do: declare the rerun as a replication with its own id
(``-S cell.replication=<id>``), whose record is then ``<name>-rep-<id>.json`` -- a separate,
visibly labelled result, itself run once. Validation cells (where settings are chosen) may
rerun freely. A missing evidence folder refuses too: a test cell that cannot see the committed
results cannot know it is the first.
"""

from __future__ import annotations

from pathlib import Path

from studies.sweeps.config import CellParams

REPLICATION_TAG = "-rep-"
"""Between a cell's name and its replication id in the record's name."""


class AlreadyRun(RuntimeError):
    """A test cell whose result is already committed, run again without a new replication id."""


def earlier_records(name: str, evidence_dir: str | Path) -> list[Path]:
    """The committed records of the cell named ``name`` (first run, then harvested reruns)."""
    d = Path(evidence_dir)
    return [p for p in (d / f"{name}.json", *sorted(d.glob(f"{name}--*.json"))) if p.is_file()]


def check_once(cell: CellParams, name: str) -> None:
    """Refuse a test cell whose record ``name`` (replication included) is already committed."""
    if cell.split != "test":
        return
    d = Path(cell.evidence_dir)
    if not d.is_dir():
        raise AlreadyRun(f"test cell {name}: no evidence folder {d} to check it has not run "
                         "(set cell.evidence_dir to the committed evidence/runs)")
    found = earlier_records(name, d)
    if not found:
        return
    what = (f"replication {cell.replication!r} is already used" if cell.replication
            else "a test cell runs once")
    raise AlreadyRun(f"test cell {name} already has its result ({found[0]}): {what}; to run it "
                     "again declare a new replication: -S cell.replication=<new id>")
