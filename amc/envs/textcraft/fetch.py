"""Pinned, checksum-verified download of TextCraft's datapack recipes and the paper's splits.

The benchmark-faithful mode needs two things that are not in this repository:

- the 860 vanilla-datapack recipe files of AgentGym's TextCraft server, from the AgentGym
  repository at a pinned commit (one source tarball, ``recipes/*.json`` extracted);
- the AMC paper's TextCraft split files (``textcraft_train_ids.csv``, ``textcraft_test_ids.csv``,
  ``textcraft_crafting_depths.csv``) from the authors' repository at a pinned commit. Runs read
  the goal list (the depth file) from here; the ids themselves are shipped with amc
  (``amc/envs/textcraft/paper_splits.json``, equal to the two id files).

:func:`fetch_textcraft` places them under ``DEST/recipes/`` and ``DEST/splits/`` only after
verifying them: each split file by its SHA-256, the recipe folder by a *tree digest* (SHA-256 of
the sorted ``name<TAB>sha256`` lines of its ``*.json`` files). A local copy can stand in for the
download (``from_dir`` with ``recipes/`` and ``splits/``, or a previously downloaded tarball);
it is verified the same way. Nothing is written to ``DEST`` unless every check passes.
"""

from __future__ import annotations

import hashlib
import io
import shutil
import tarfile
import tempfile
from pathlib import Path

AGENTGYM_COMMIT = "3ef9235d23e68e7c2920c5422ad957dc8ced5c6c"
RECIPES_URL = f"https://codeload.github.com/WooooDyy/AgentGym/tar.gz/{AGENTGYM_COMMIT}"
RECIPES_IN_TAR = "agentenv-textcraft/agentenv_textcraft/recipes/"
RECIPES_TREE_SHA256 = "66a94181db166983603dc03b64768b7e6c20ec75350a0c6ce6a0852b640e2348"
RECIPES_COUNT = 860

AMC_COMMIT = "f156b17938720c08f9fba7f5aba2d22c03fd6182"
SPLITS_URL = (
    f"https://raw.githubusercontent.com/layer6ai-labs/Agentic-Monte-Carlo/{AMC_COMMIT}/textcraft_idx/"
)
SPLIT_SHA256 = {
    "textcraft_crafting_depths.csv":
        "8b47cde99de90f454866e8703a40f0517027546eeaa7cd26e85c9ef1d82e2432",
    "textcraft_test_ids.csv": "fd4097815b4adf50f67929c78a1d0c2802adf0e54d4ac831ab1c8243ad6f1beb",
    "textcraft_train_ids.csv": "941622c90c9b8ff4a008f95ac746bd7e8e568c5ce5769f14caa822c380ca8648",
}


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def tree_digest(files: dict[str, bytes]) -> str:
    """SHA-256 of the sorted ``name\\tsha256(content)`` lines (order- and path-independent)."""
    lines = "".join(f"{n}\t{sha256(files[n])}\n" for n in sorted(files))
    return sha256(lines.encode())


def _download(url: str) -> bytes:
    import httpx

    try:
        with httpx.stream("GET", url, follow_redirects=True, timeout=120) as r:
            r.raise_for_status()
            return r.read()
    except httpx.HTTPError as err:
        raise ValueError(f"download failed: {url}: {err}") from None


def recipes_from_tarball(data: bytes) -> dict[str, bytes]:
    """The ``recipes/*.json`` files of an AgentGym source tarball, by file name."""
    out: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for m in tar.getmembers():
            _, _, name = m.name.partition("/")  # strip the "AgentGym-<commit>/" prefix
            if m.isfile() and name.startswith(RECIPES_IN_TAR) and name.endswith(".json"):
                f = tar.extractfile(m)
                if f is not None:
                    out[Path(name).name] = f.read()
    return out


def verify_recipes(files: dict[str, bytes]) -> None:
    digest = tree_digest(files)
    if digest != RECIPES_TREE_SHA256:
        raise ValueError(
            f"recipe files fail verification: {len(files)} files (expected {RECIPES_COUNT}), "
            f"tree digest {digest[:12]}... (expected {RECIPES_TREE_SHA256[:12]}...)"
        )


def verify_split(name: str, data: bytes) -> None:
    got = sha256(data)
    if got != SPLIT_SHA256[name]:
        raise ValueError(f"{name}: SHA-256 {got[:12]}... != pinned {SPLIT_SHA256[name][:12]}...")


def fetch_textcraft(
    dest: str | Path,
    *,
    from_dir: str | Path | None = None,
    recipes_tarball: str | Path | None = None,
) -> Path:
    """Download (or copy from ``from_dir``), verify, and place recipes and splits under ``dest``.

    Returns ``dest``. ``from_dir`` must hold ``recipes/*.json`` (or ``textcraft-recipes/``) and
    ``splits/<split files>``; ``recipes_tarball`` is an AgentGym source ``.tar.gz``."""
    dest = Path(dest)
    src = Path(from_dir) if from_dir is not None else None
    if src is not None:
        rdir = next((src / d for d in ("recipes", "textcraft-recipes") if (src / d).is_dir()), None)
        if rdir is None:
            raise FileNotFoundError(f"{src} has no recipes/ (or textcraft-recipes/) folder")
        recipes = {p.name: p.read_bytes() for p in sorted(rdir.glob("*.json"))}
    elif recipes_tarball is not None:
        recipes = recipes_from_tarball(Path(recipes_tarball).read_bytes())
    else:
        recipes = recipes_from_tarball(_download(RECIPES_URL))
    verify_recipes(recipes)
    splits: dict[str, bytes] = {}
    for name in SPLIT_SHA256:
        if src is not None:
            p = src / "splits" / name
            if not p.is_file():
                raise FileNotFoundError(f"split file not found: {p}")
            splits[name] = p.read_bytes()
        else:
            splits[name] = _download(SPLITS_URL + name)
        verify_split(name, splits[name])
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest) as tmp:  # build aside, then move into place
        t = Path(tmp)
        for sub, files in (("recipes", recipes), ("splits", splits)):
            (t / sub).mkdir()
            for name, data in files.items():
                (t / sub / name).write_bytes(data)
            if (dest / sub).exists():
                shutil.rmtree(dest / sub)
            (t / sub).rename(dest / sub)
    return dest
