"""Download and verify the public WebShop catalog files (``amc fetch webshop``).

The 1,000-product setting needs ``items_shuffle_1000.json`` (products, ~4.5 MB) and
``items_ins_v2_1000.json`` (attributes and synthetic instructions, 147 kB); human goals also
need ``items_human_ins.json`` (~5.1 MB). They are public (Princeton NLP WebShop, MIT licence)
but in no package registry. Sources:

- default: the copy vendored in the AgentGym repository (the server the paper used), pinned to
  commit :data:`SOURCE_COMMIT`, as raw files from :data:`DEFAULT_BASE_URL`;
- WebShop's own ``setup.sh -d small`` (Google Drive ids ``1EgHdxQ_YxqIQlvvq5iKlCrkEKR6-j0Ib``
  for items_shuffle_1000, ``1IduG0xl544V_A_jv3tHXC0kyFi7PnyBu`` for items_ins_v2_1000,
  ``14Kb5SPBk_jfdLZ_CDBNitW98QLDlKR5O`` for items_human_ins): download them by hand and use
  ``--from-dir``; any mirror serving the three names can be given as ``--base-url``.

Verification. Every file is checked against the **git blob SHA-1** that AgentGym's public git
tree records for it at :data:`SOURCE_COMMIT` (``sha1(b"blob <size>\\0" + content)``, what
``git hash-object`` prints); these ids are read from the public tree, so they are known for all
three files. A SHA-256 is pinned only where we could verify it (items_ins_v2_1000.json); the
user can add SHA-256 pins (``--sha256 NAME=HEX`` or a ``sha256sum``-style ``--checksums``
file), which are then enforced too. A file that fails a check is never put in place.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from amc.envs.webshop.catalog import ATTRIBUTES_FILE, HUMAN_FILE, PRODUCTS_FILE
from amc.results import current_umask

SOURCE_COMMIT = "3ef9235d23e68e7c2920c5422ad957dc8ced5c6c"
"""AgentGym commit whose ``agentenv-webshop/webshop/data/`` holds the catalog files."""
DEFAULT_BASE_URL = (
    f"https://raw.githubusercontent.com/WooooDyy/AgentGym/{SOURCE_COMMIT}"
    "/agentenv-webshop/webshop/data"
)


class ChecksumError(ValueError):
    """A downloaded or copied file does not match its pinned checksum."""


@dataclass(frozen=True)
class FilePin:
    """What a catalog file must hash to (any field left None is not checked)."""

    git_blob_sha1: str | None = None
    sha256: str | None = None


CATALOG_PINS: dict[str, FilePin] = {
    PRODUCTS_FILE: FilePin(git_blob_sha1="08dfda9a1c896e0f69d50e3437dd3fe94419b7d7"),
    ATTRIBUTES_FILE: FilePin(
        git_blob_sha1="22837ad99f3173712fc9cb1cce7de6b75fe90595",
        sha256="f88a36314a397b53b3d9c3fa5878e5f7b26d35019a51ec83fbedeca61a948f6f",
    ),
    HUMAN_FILE: FilePin(git_blob_sha1="b2ab7479b9798e0b62ea394e065f3d506875f090"),
}


def _hash_file(path: Path, h: Any, prefix: bytes = b"") -> str:
    h.update(prefix)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def git_blob_sha1(path: Path) -> str:
    """The id git gives the file's content (``git hash-object``)."""
    return _hash_file(path, hashlib.sha1(), f"blob {Path(path).stat().st_size}\0".encode())


def sha256_file(path: Path) -> str:
    return _hash_file(path, hashlib.sha256())


def verify_file(path: Path, pin: FilePin, name: str | None = None) -> None:
    """Raise :class:`ChecksumError` unless ``path`` matches every checksum in ``pin``."""
    name = name or Path(path).name
    if pin.git_blob_sha1 and (got := git_blob_sha1(path)) != pin.git_blob_sha1.lower():
        raise ChecksumError(f"{name}: git blob sha1 {got} != pinned {pin.git_blob_sha1}")
    if pin.sha256 and (got := sha256_file(path)) != pin.sha256.lower():
        raise ChecksumError(f"{name}: sha256 {got} != pinned {pin.sha256}")


def read_checksums(path: Path) -> dict[str, str]:
    """Parse ``<sha256>  <file name>`` lines (``sha256sum`` output; ``#`` comments allowed)."""
    out = {}
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 2 or len(parts[0]) != 64:
            raise ValueError(f"{path}:{n}: expected '<sha256 hex>  <file name>', got {line!r}")
        out[Path(parts[1].lstrip("*")).name] = parts[0].lower()
    return out


def merged_pins(
    files: Iterable[str], sha256: Mapping[str, str] | None = None,
    pins: Mapping[str, FilePin] = CATALOG_PINS,
) -> dict[str, FilePin]:
    """The pins of ``files``, with user SHA-256 values added (they must not contradict ours)."""
    out = {}
    for f in files:
        pin = pins.get(f, FilePin())
        user = (sha256 or {}).get(f)
        if user and pin.sha256 and user.lower() != pin.sha256:
            raise ValueError(f"--sha256 for {f} contradicts the pinned {pin.sha256}")
        out[f] = FilePin(pin.git_blob_sha1, user.lower() if user else pin.sha256)
    return out


def fetch_webshop(
    out_dir: Path | str,
    *,
    human: bool = True,
    base_url: str = DEFAULT_BASE_URL,
    from_dir: Path | str | None = None,
    sha256: Mapping[str, str] | None = None,
    force: bool = False,
    pins: Mapping[str, FilePin] = CATALOG_PINS,
    client: httpx.Client | None = None,
) -> list[Path]:
    """Put the verified catalog files in ``out_dir`` (skipping ones already there and valid).

    Files come from ``from_dir`` (a local copy) or are downloaded from ``base_url``. Returns the
    paths in place. Raises :class:`ChecksumError` or ``httpx.HTTPError`` naming the file.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    names = [PRODUCTS_FILE, ATTRIBUTES_FILE] + ([HUMAN_FILE] if human else [])
    table = merged_pins(names, sha256, pins)
    own_client = client is None
    http = client or httpx.Client(timeout=httpx.Timeout(60.0), follow_redirects=True)
    done = []
    try:
        for name in names:
            dest = out / name
            if dest.exists() and not force:
                try:
                    verify_file(dest, table[name])
                    done.append(dest)
                    continue
                except ChecksumError:
                    pass  # a stale or partial copy: fetch it again
            with tempfile.NamedTemporaryFile(dir=out, prefix=f".{name}.", delete=False) as tmp:
                tmp_path = Path(tmp.name)
                os.fchmod(tmp.fileno(), 0o666 & ~current_umask())  # not mkstemp's 0600
                try:
                    if from_dir is not None:
                        src = Path(from_dir) / name
                        if not src.is_file():
                            raise FileNotFoundError(f"{src} does not exist")
                        with open(src, "rb") as f:
                            shutil.copyfileobj(f, tmp)
                    else:
                        with http.stream("GET", f"{base_url.rstrip('/')}/{name}") as r:
                            r.raise_for_status()
                            for chunk in r.iter_bytes(1 << 20):
                                tmp.write(chunk)
                    tmp.flush()
                    verify_file(tmp_path, table[name], name)
                except BaseException:
                    tmp_path.unlink(missing_ok=True)
                    raise
            tmp_path.replace(dest)  # atomic: a reader never sees a half-written file
            done.append(dest)
    finally:
        if own_client:
            http.close()
    return done
