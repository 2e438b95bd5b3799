"""The evaluation markdown artifact shows the report's plots as images (PNG data URIs)."""

import base64
import re
from pathlib import Path

from flows._common import PLOTS, eval_markdown

METHOD = {"role": "challenger", "n": 4, "tasks": 3, "success": 0.5, "success_se": 0.1,
          "deployable_reward": 0.4, "max_weight_reward": 0.6, "oracle_best": 0.7,
          "tokens_per_task": 123.0}
EV = {"env": "synthetic", "status": "complete", "n_tasks": 3, "seeds": [0], "n_grid": [4],
      "models": {"challenger": "v2", "champion": "v1"}, "methods": {"amc@4+challenger": METHOD}}


def _images(md: str) -> dict[str, bytes]:
    return {alt: base64.b64decode(data) for alt, data in
            re.findall(r"!\[([^\]]+)\]\(data:image/png;base64,([A-Za-z0-9+/=]+)\)", md)}


def test_eval_markdown_embeds_each_written_plot_and_names_the_missing(tmp_path: Path) -> None:
    written = PLOTS[:2]
    for i, name in enumerate(written):
        (tmp_path / name).write_bytes(b"\x89PNG\r\n\x1a\n" + bytes([i]) * 64)
    md = eval_markdown(EV, tmp_path)
    assert _images(md) == {Path(n).stem.replace("_", " "): (tmp_path / n).read_bytes()
                           for n in written}
    for name in PLOTS[2:]:
        assert f"({name}: not written)" in md
    assert "| amc@4+challenger | 4 | 0.500 ± 0.100 |" in md


def test_eval_markdown_without_plots_dir_has_no_plot_section() -> None:
    md = eval_markdown(EV)
    assert "## Plots" not in md and not _images(md)
