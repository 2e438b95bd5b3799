"""Write a benchmark's results into its own section of ``docs/benchmarks.md``.

Each benchmark owns the block between ``<!-- bench:NAME -->`` and ``<!-- /bench:NAME -->``
and replaces it on every run, so scripts never clobber each other's figures.
"""

from __future__ import annotations

import platform
import re
import time
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"
HEADER = (
    "# Benchmarks\n\n"
    "Measured by the scripts in `benchmarks/` (each section names its script). Ratios are\n"
    "measured side by side in one run, because the machine is shared and noisy.\n"
)


def machine() -> str:
    """A one-line description of where the numbers were measured."""
    import os

    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


def write_section(name: str, title: str, body: str, doc: Path = DOC) -> None:
    """Replace (or append) the section ``name`` of the benchmarks document."""
    doc.parent.mkdir(parents=True, exist_ok=True)
    text = doc.read_text() if doc.exists() else HEADER
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    block = (
        f"<!-- bench:{name} -->\n## {title}\n\n"
        f"_Measured {stamp} on {machine()}._\n\n{body.strip()}\n<!-- /bench:{name} -->"
    )
    pat = re.compile(rf"<!-- bench:{re.escape(name)} -->.*?<!-- /bench:{re.escape(name)} -->", re.S)
    text = pat.sub(lambda _: block, text) if pat.search(text) else text.rstrip() + "\n\n" + block
    doc.write_text(text.rstrip() + "\n")


def md_table(header: list[str], rows: list[list[object]]) -> str:
    """A GitHub-flavoured markdown table."""
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)
