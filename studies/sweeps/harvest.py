"""Experiment results -> committed evidence: every sweep cell's rows out of DVC's experiment refs.

DVC keeps each experiment as a commit under ``refs/exps/...`` of the repository it ran in;
those refs do not travel with a branch, so the evidence is copied out: for every experiment
ref, ``sweeps/out/runs.json`` of its commit becomes ``evidence/runs/<cell name>.json`` (one
compact row per line, so diffs stay readable), and the learned value's quality curve
(``sweeps/out/value_quality.json`` of the checked-out commit) becomes
``evidence/value_quality.json`` and, by the value's content hash,
``evidence/values/<hash>.json`` (so cells run with an earlier value keep its quality beside
them); WebShop's and SciWorld's values (``sweeps/out/value_quality_<bench>.json``, stages
``value_webshop`` / ``value_sciworld``) likewise, as ``evidence/value_quality_<bench>.json`` and
under ``values/``. Nothing is
dropped: a name seen twice with different rows keeps both (the second gets the experiment's
name as a suffix). Every file is strict JSON (a non-finite number is written null, issue 63);
:func:`read_record` and :func:`loads_quality` read them back as the writers held them.

    python -m studies.sweeps.harvest --repo /tmp/clone --out evidence
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import subprocess
from pathlib import Path
from typing import Any

from amc.results import dumps, strict
from amc.value.offline import figures_from_json

RUNS = "sweeps/out/runs.json"
QUALITY = "sweeps/out/value_quality.json"
QUALITY_FILES = (QUALITY, "sweeps/out/value_quality_webshop.json",
                 "sweeps/out/value_quality_sciworld.json")
"""Every value stage's quality record (TextCraft's, WebShop's, SciWorld's)."""


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout


def experiment_refs(repo: Path) -> list[str]:
    """Every experiment commit's ref (sorted: a stable harvest order)."""
    return sorted(git(repo, "for-each-ref", "--format=%(refname)", "refs/exps").split())


def dumps_record(rec: dict[str, Any]) -> str:
    """The evidence file: header keys indented, one row per line (strict JSON: a metric not
    measured, NaN, is written null)."""
    head = {k: v for k, v in rec.items() if k != "rows"}
    body = ",\n".join(dumps(r, sort_keys=True) for r in rec["rows"])
    text = dumps(head, indent=1, sort_keys=True)
    return text[:-2] + ',\n "rows": [\n' + body + "\n ]\n}\n"


def loads_record(text: str) -> dict[str, Any]:
    """A cell record as its cell wrote it: a row's metric written null reads NaN again."""
    rec: dict[str, Any] = json.loads(text)
    for r in rec.get("rows") or []:
        for k in ("bon", "amc"):
            if isinstance(m := (r.get(k) or {}).get("metrics"), dict):
                r[k]["metrics"] = {n: math.nan if v is None else v for n, v in m.items()}
    return rec


def read_record(path: str | Path) -> dict[str, Any]:
    """:func:`loads_record` of a cell record file (``evidence/runs/<name>.json``)."""
    return loads_record(Path(path).read_text())


def loads_quality(text: str) -> dict[str, Any]:
    """A value's quality record with its offline figures as computed (null: NaN, or +inf for
    ``small_p_ratio``, :func:`amc.value.offline.figures_from_json`)."""
    q: dict[str, Any] = json.loads(text)
    off = q.get("offline")
    if isinstance(off, dict):
        for who, figs in off.items():
            if isinstance(figs, dict):
                off[who] = figures_from_json(figs)
    return q


NON_FINITE = re.compile(r'("(?:[^"\\]|\\.)*")|-?Infinity|NaN')
"""A JSON string (kept as it is), or a non-finite number as Python's json writes it."""


def strict_text(text: str) -> str:
    """``text`` (JSON as Python writes it) with every ``NaN`` / ``Infinity`` / ``-Infinity``
    number as ``null`` and every other byte as it was (a value stage's quality record copied
    from an older experiment)."""
    return NON_FINITE.sub(lambda m: m.group(1) or "null", text)


def save(rec: dict[str, Any], out: Path, suffix: str) -> Path | None:
    """Write one cell's record; None when a file of that name already holds the same rows."""
    out.mkdir(parents=True, exist_ok=True)
    same_name = [out / f"{rec['name']}.json", *sorted(out.glob(f"{rec['name']}--*.json"))]
    existing = [p for p in same_name if p.is_file()]
    if any(json.loads(p.read_text())["rows"] == strict(rec["rows"]) for p in existing):
        return None
    path = out / (f"{rec['name']}--{suffix}.json" if existing else f"{rec['name']}.json")
    path.write_text(dumps_record(rec))
    return path


def harvest(repo: Path, out: Path) -> list[Path]:
    """Copy every experiment's cell record (and the value's quality curve) under ``out``."""
    written = []
    for ref in experiment_refs(repo):
        try:
            text = git(repo, "show", f"{ref}:{RUNS}")
        except subprocess.CalledProcessError:
            continue  # an experiment of another stage (e.g. the value alone)
        rec = json.loads(text)
        rec["experiment"] = ref.rsplit("/", 1)[-1]
        qtexts = []  # the values this experiment trained (or checked out)
        for path in QUALITY_FILES:
            try:
                qtexts.append(git(repo, "show", f"{ref}:{path}"))
            except subprocess.CalledProcessError:
                continue
        used = rec.get("value_model_hash")
        for qtext in qtexts:
            if used is not None and used == json.loads(qtext).get("model_hash"):
                rec["value_model_hash"] = value_id(json.loads(qtext))  # with its calibration
        p = save(rec, out / "runs", rec["experiment"])
        if p is not None:
            written.append(p)
        for qtext in qtexts:
            written += save_quality(qtext, out)
    for path in QUALITY_FILES:
        quality = repo / path
        if quality.is_file():
            (out / quality.name).write_text(strict_text(quality.read_text()))
            written.append(out / quality.name)
            written += save_quality(quality.read_text(), out)
    return written


def value_id(quality: dict[str, Any]) -> str:
    """Which value a cell applied: the model's content hash, and -- when the value stage fitted
    a calibration (``calibration.json`` beside the weights, which the model hash does not
    cover) -- its method and a digest of its fitted parameters. Without this, issue 30's
    Bernoulli head with and without Platt calibration share one hash."""
    cal = quality.get("calibration") or {}
    h = str(quality["model_hash"])
    if cal.get("method", "none") == "none":
        return h
    digest = hashlib.sha256(json.dumps(cal, sort_keys=True).encode()).hexdigest()[:8]
    return f"{h}-{cal['method']}-{digest}"


def save_quality(text: str, out: Path) -> list[Path]:
    """``values/<value id>.json`` (:func:`value_id`): every value's quality stays, for the cells
    that used it (issue 30 compares value variants' held-out figures with their cells' gains).
    The first record of a value id is kept: a later experiment's copy of the same value differs
    only in its run records (wall times), and rewriting it would churn the committed file."""
    q = json.loads(text)
    if not q.get("model_hash"):
        return []
    path = out / "values" / f"{value_id(q)}.json"
    if path.is_file():
        return []
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(strict_text(text))
    return [path]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", type=Path, default=Path("."), help="where the experiments ran")
    ap.add_argument("--out", type=Path, default=Path("evidence"))
    args = ap.parse_args()
    for p in harvest(args.repo.resolve(), args.out):
        print(p)


if __name__ == "__main__":
    main()
