"""The one value-quality plot (:func:`amc.value.scale.plot_quality`), drawn by the scale study
and by the evidence document: reproducible bytes, the evidence figure's size, a title option."""

import json
import struct
from pathlib import Path

from amc.value.scale import plot_quality

REPO = Path(__file__).resolve().parents[2]
ROWS = [{"train_states": n, "pearson": p, "auc": a, "ece": e}
        for n, p, a, e in ((100, 0.2, 0.6, 0.3), (1000, 0.4, 0.7, 0.2), (10000, 0.5, 0.8, 0.1))]


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


def test_the_same_rows_give_the_same_bytes_and_a_title_is_drawn(tmp_path: Path) -> None:
    a = plot_quality(ROWS, tmp_path / "a.png")
    b = plot_quality(ROWS, tmp_path / "sub" / "b.png")  # folders made
    assert a.read_bytes() == b.read_bytes()  # no timestamp in the metadata
    titled = plot_quality(ROWS, tmp_path / "t.png", "held-out test tasks")
    assert titled.read_bytes() != a.read_bytes() and _png_size(titled) == _png_size(a)


def test_the_evidence_figure_is_this_plot(tmp_path: Path) -> None:
    curve = json.loads((REPO / "evidence/value_quality.json").read_text())["curve"]
    out = plot_quality(curve, tmp_path / "value_quality.png")
    assert _png_size(out) == _png_size(REPO / "docs/evidence/value_quality.png") == (605, 396)
