"""A plot in a markdown artifact is the image itself (a PNG data URI), not only its path."""

import base64
import re
from pathlib import Path

from flows._artifacts import image_markdown


def test_image_markdown_embeds_the_png_bytes(tmp_path: Path) -> None:
    png = tmp_path / "p.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    md = image_markdown(png, "a plot")
    m = re.match(r"!\[a plot\]\(data:image/png;base64,([A-Za-z0-9+/=]+)\)", md)
    assert m and base64.b64decode(m.group(1)) == png.read_bytes()
    assert f"`{png}`" in md
