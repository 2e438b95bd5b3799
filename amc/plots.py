"""Headless, reproducible figures: the pyplot import and the PNG save the project's plots share.

Matplotlib runs with the Agg backend (no display needed, on servers too), imported only when a
figure is drawn. :func:`save_png` writes without a timestamp in the PNG metadata, so drawing
the same figure again gives the same bytes (a regenerated document changes only when its
results did).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

PNG_META = {"Software": None}
"""PNG metadata of every saved figure: no matplotlib version, no timestamp."""


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_png(fig: Any, out: str | Path, dpi: int = 110) -> Path:
    """Tight layout, save ``fig`` at ``out`` (folders made) with fixed metadata, close it."""
    fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=dpi, metadata=PNG_META)
    pyplot().close(fig)
    return out
