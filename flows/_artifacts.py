"""Images in Prefect markdown artifacts: a plot inline (a data URI), not a path on the worker.

A path such as ``plots/drift_demo.png`` means nothing to someone reading the artifact in the
Prefect UI on another machine; the PNG itself, base64-encoded into the markdown, shows there.
"""

from __future__ import annotations

import base64
from pathlib import Path


def image_markdown(path: str | Path, alt: str) -> str:
    """Markdown showing the PNG at ``path`` inline, followed by where the file is."""
    data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
    return f"![{alt}](data:image/png;base64,{data})\n\n(file: `{path}`)"
