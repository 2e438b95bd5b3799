"""The fine-tuned prior's search: the declared rule, declared cells only, held-out tasks only."""

import json
from pathlib import Path

import pytest

from studies.sft_prior.regime_search import analyse, run

REPO = Path(__file__).resolve().parents[3]


def row(room: float, n: int = 4, h: int = 8, step: int = 2, ckpt: int = 100, lo: float = 0.01,
        p: float = 0.01, ratio: float = 4.0) -> dict:
    return {"room": room, "n": n, "horizon": h, "step": step, "checkpoint": ckpt,
            "room_lo": lo, "p": p, "rollout_ceiling_calls_ratio": ratio}


def test_the_rule_takes_the_largest_significant_affordable_room_and_breaks_ties() -> None:
    rows = [row(0.30, lo=-0.01), row(0.28, p=0.06), row(0.27, ratio=9.0), row(0.20, n=8),
            row(0.20, n=4, h=10), row(0.20, n=4, h=8, ckpt=150), row(0.20, n=4, h=8, ckpt=50)]
    best = analyse.choose(rows)
    assert best is not None and (best["n"], best["horizon"], best["checkpoint"]) == (4, 8, 50)
    assert analyse.choose([row(0.3, lo=-0.1)]) is None


def test_search_tasks_are_held_out_validation_tasks_never_demonstrated() -> None:
    proto = run.protocol()
    held = json.loads((REPO / "studies/sft_prior/heldout.json").read_text())["tasks"]
    for depth in proto["candidates"]["depth"]:
        tasks = proto["collection"]["tasks"][str(depth)]
        assert tasks == held[f"validation-depth{depth}"]
        assert not set(tasks) & set(held[f"test-reserve-depth{depth}"])


def test_an_undeclared_cell_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert run.main(["--step", "77", "--depth", "2", "--keep-only"]) == 2
    assert "not a declared cell" in capsys.readouterr().err
