"""Issue 63: every JSON the project commits parses strictly (no NaN / Infinity), and the
evidence writers write a non-finite number null, read back as the cell or value held it."""

from __future__ import annotations

import gzip
import json
import math
import subprocess
from pathlib import Path

import pytest

from studies.sweeps.harvest import (
    dumps_record,
    loads_quality,
    loads_record,
    save,
    save_quality,
    strict_text,
)

REPO = Path(__file__).resolve().parents[3]
FOLDERS = ("data", "metrics", "evidence")
SUFFIXES = (".json", ".jsonl", ".json.gz", ".jsonl.gz")


def refuse(token: str) -> None:
    raise ValueError(f"not strict JSON: {token}")


def committed_json() -> list[Path]:
    try:
        out = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", *FOLDERS],
                             capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [REPO / f for f in out.split("\0") if f.endswith(SUFFIXES) and (REPO / f).is_file()]


def test_every_committed_json_parses_strictly():
    files = committed_json()
    assert files
    bad = []
    for p in files:
        raw = p.read_bytes()
        text = (gzip.decompress(raw) if p.name.endswith(".gz") else raw).decode()
        try:
            if ".jsonl" in p.name:
                for line in text.splitlines():
                    if line.strip():
                        json.loads(line, parse_constant=refuse)
            else:
                json.loads(text, parse_constant=refuse)
        except ValueError as err:
            bad.append(f"{p.relative_to(REPO)}: {err}")
    assert not bad, "\n".join(bad)


def test_cell_record_writes_null_for_nan_and_reads_it_back(tmp_path: Path):
    row = {"task_id": "1", "seed": 0,
           "bon": {"metrics": {"oracle_best": 1.0, "deployable_reward": math.nan}, "calls": 2},
           "amc": {"metrics": {"oracle_best": 0.0, "deployable_reward": math.nan}, "calls": 3}}
    rec = {"name": "test-x", "cell": {"q": 0.4}, "summary": {"pairs": 1.0}, "rows": [row]}
    text = dumps_record(rec)
    assert json.loads(text, parse_constant=refuse)["rows"][0]["amc"]["metrics"][
        "deployable_reward"] is None
    back = loads_record(text)
    assert math.isnan(back["rows"][0]["bon"]["metrics"]["deployable_reward"])
    assert back["rows"][0]["bon"]["metrics"]["oracle_best"] == 1.0
    assert save(rec, tmp_path, "exp") == tmp_path / "test-x.json"
    assert save(rec, tmp_path, "exp") is None  # the same rows (NaN as null): not written twice


def test_quality_record_copied_strict_and_read_back(tmp_path: Path):
    q = {"model_hash": "m", "note": "NaN stays in a string",
         "offline": {"learned": {"small_p_mean": 0.2, "small_p_rate": 0.0,
                                 "small_p_ratio": math.inf, "doomed_mean": math.nan}}}
    text = json.dumps(q, indent=1, sort_keys=True) + "\n"
    assert strict_text(text) == text.replace("Infinity", "null").replace(": NaN", ": null")
    save_quality(text, tmp_path)
    kept = (tmp_path / "values/m.json").read_text()
    assert json.loads(kept, parse_constant=refuse)["note"] == q["note"]
    fig = loads_quality(kept)["offline"]["learned"]
    assert fig["small_p_ratio"] == math.inf and math.isnan(fig["doomed_mean"])
