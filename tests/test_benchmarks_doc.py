"""docs/benchmarks.md's value-stage figures are the committed measurement's, rendered.

The section is written by ``benchmarks/bench_value_stage.py`` from the figures it also saves
(``docs/value-stage/timing.json``); a hand edit of a number, or a measurement committed without
its section (or the reverse), fails here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from benchmarks.bench_value_stage import GOAL_S, report

ROOT = Path(__file__).resolve().parents[1]


def test_value_stage_section_renders_the_committed_timing():
    m = json.loads((ROOT / "docs/value-stage/timing.json").read_text())
    doc = (ROOT / "docs/benchmarks.md").read_text()
    block = re.search(r"<!-- bench:value-stage -->.*?_\n\n(.*?)\n<!-- /bench:value-stage -->",
                      doc, re.S)
    assert block is not None and block.group(1).strip() == report(m).strip()
    phases = sum(v["wall_s"] for v in m["phases"].values())
    assert phases <= m["total"]["wall_s"]  # the phases are parts of the whole
    assert m["splits"]["train"]["rows"] >= 20000
    assert ("**met**" in block.group(1)) == (m["total"]["wall_s"] <= GOAL_S)
