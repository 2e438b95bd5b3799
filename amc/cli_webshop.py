"""``amc fetch-webshop``: put the WebShop catalog (or a generated demo catalog) in place."""

from __future__ import annotations

from pathlib import Path

import typer

from amc.cli import app, friendly_errors


@app.command("fetch-webshop")
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
