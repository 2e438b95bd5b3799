"""``amc fetch <benchmark>``: third-party benchmark data, pinned and checksum-verified.

- ``amc fetch textcraft``: TextCraft's datapack recipes and the paper's split.
- ``amc fetch webshop``: the WebShop catalog files (or ``--fixture``: a generated demo catalog).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from amc.cli.errors import friendly_errors


@friendly_errors
def fetch_webshop_cmd(
    out: Path = typer.Option(Path("data/webshop"), help="Catalog directory to fill."),
    human: bool = typer.Option(True, help="Also fetch items_human_ins.json (human goals)."),
    base_url: str | None = typer.Option(None, help="Mirror serving the three file names."),
    from_dir: Path | None = typer.Option(None, help="Copy the files from a local directory."),
    sha256: list[str] = typer.Option([], help="Extra pin NAME=HEX (repeatable)."),
    checksums: Path | None = typer.Option(None, help="sha256sum-style file of extra pins."),
    force: bool = typer.Option(False, help="Re-fetch files that are already there and valid."),
    fixture: bool = typer.Option(False, help="Write a small generated demo catalog instead."),
) -> None:
    """Download the public WebShop catalog files, verify their checksums, place them in OUT."""
    from amc.envs.webshop.data import DEFAULT_BASE_URL, fetch_webshop, read_checksums

    if fixture:
        from amc.envs.webshop.fixture import write_fixture_catalog

        typer.echo(f"wrote a generated demo catalog to {write_fixture_catalog(out)}")
        return
    pins = read_checksums(checksums) if checksums else {}
    for item in sha256:
        name, sep, hexdigest = item.partition("=")
        if not sep or len(hexdigest) != 64:
            raise ValueError(f"--sha256 takes NAME=<64 hex digits>, got {item!r}")
        pins[name] = hexdigest.lower()
    import httpx

    try:
        paths = fetch_webshop(
            out, human=human, base_url=base_url or DEFAULT_BASE_URL, from_dir=from_dir,
            sha256=pins, force=force,
        )
    except httpx.HTTPError as err:
        raise ValueError(f"download failed: {err}") from None
    for p in paths:
        typer.echo(f"ok {p} ({p.stat().st_size:,} bytes)")


@friendly_errors
def fetch_textcraft_cmd(
    dest: Annotated[Path, typer.Option(help="Where recipes/ and splits/ are placed.")]
    = Path("data/textcraft"),
    from_dir: Annotated[
        Path | None, typer.Option(help="Verify and copy a local copy instead of downloading.")
    ] = None,
    recipes_tarball: Annotated[
        Path | None, typer.Option(help="An already downloaded AgentGym source .tar.gz.")
    ] = None,
) -> None:
    """Download TextCraft's datapack recipes and the paper's splits (pinned, SHA-256 checked)."""
    from amc.envs.textcraft.fetch import fetch_textcraft

    out = fetch_textcraft(dest, from_dir=from_dir, recipes_tarball=recipes_tarball)
    typer.echo(
        f"placed {out}/recipes and {out}/splits; use env.options.recipe_source={out}/recipes "
        f"and splits_dir={out}/splits"
    )
