"""The render check renders the protocol's (or a run's drawn) tasks with two renderers: a
drawn-task file sets what is rendered, and every rendered state is counted."""

from __future__ import annotations

import json
from pathlib import Path

from studies.confirm import render_parity

ROOT = Path(__file__).resolve().parents[3]


def test_a_drawn_task_file_sets_the_rendered_states(tmp_path: Path) -> None:
    drawn = tmp_path / "tasks.json"
    drawn.write_text(json.dumps({"tasks": [{"task_id": t} for t in ("0", "3")]}))
    out = tmp_path / "parity.json"
    assert render_parity.main([str(ROOT), str(ROOT / "studies/confirm/textcraft.json"),
                               str(ROOT / "sweeps/kept/value"), "--rollouts", "2", "--steps", "3",
                               "--tasks-file", str(drawn), "--out", str(out)]) == 0
    rec = json.loads(out.read_text())
    # 2 drawn tasks x 2 rollouts x at most 3 prefixes (the declared split would give >= 108)
    assert 2 * 2 <= rec["states"] <= 2 * 2 * 3
    assert 0 <= rec["model_input_differs"] <= rec["text_differs"] <= rec["states"]
