"""params.yaml is written the way ``dvc exp run -S`` rewrites it (block lists, null as an empty
value, unquoted strings), so an override's diff is the one line it changes, not the whole file.
"""

from __future__ import annotations

import difflib
import shutil
from pathlib import Path

import pytest
from dvc.utils.hydra import apply_overrides

from amc.pipeline.params import load_params

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("override", "line"), [
    ("train.lr=1e-4", "  lr: 0.0001"),
    ("collect.seeds=[1]", "  - 1"),
    ("promote.n=4", "  n: 4                       # null = largest N of evaluate.n_grid"),
])
def test_an_override_changes_one_line(tmp_path: Path, override: str, line: str) -> None:
    path = tmp_path / "params.yaml"
    shutil.copy(ROOT / "params.yaml", path)
    before = path.read_text().splitlines()
    apply_overrides(str(path), [override])  # what `dvc exp run -S` does to params.yaml
    after = path.read_text().splitlines()
    changed = [d for d in difflib.unified_diff(before, after, lineterm="", n=0)
               if d[:1] in "+-" and not d.startswith(("+++", "---"))]
    assert [d for d in changed if d.startswith("+")] == [f"+{line}"], changed
    assert len(changed) == 2, changed
    assert load_params(path) != load_params(ROOT / "params.yaml")
