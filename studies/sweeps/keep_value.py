"""A head-mode value directory kept small enough for git, and restored byte for byte.

A head-mode value (frozen encoder, trained head: the sweeps' values) is saved as the full model
(:meth:`amc.value.model.ValueModel.save`), whose encoder tensors are the pinned backbone
package's own weights, unchanged: about 90 MB of which only a few kB were learned. Without a
DVC remote a fresh machine would have to retrain the value, and a retrain is not bit for bit
the same across machines, so every cell that used it would be superseded.

Kept (:func:`keep`): the head's tensors (``head.safetensors``), every other file of the
directory verbatim (configuration, tokenizer, calibration, run records) and the sha256 of each
original file (``kept.json``). Restored (:func:`restore`): the model rebuilt from its saved
configuration with the package's encoder, the kept head loaded, saved by the same code; every
file is checked against its sha256, so a restored directory is the original byte for byte (and
DVC's hash of it matches the lock), or restoring fails and writes nothing. :func:`keep` restores
once into a scratch folder before it writes, so a value whose encoder was trained (not head
mode) is refused when kept, not when it is needed. (In ``studies/sweeps``, not ``amc/value``:
``amc/value`` is a folder dep of the value stages, and a file added there would make every
locked value stage stale.)
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from pathlib import Path

from amc.value.model import CONFIG_FILE, FULL_WEIGHTS, ModelConfig, build_model

MANIFEST = "kept.json"
"""The kept copy's record: ``{"format": 1, "files": {relative path: sha256}}``."""
KEPT_HEAD = "head.safetensors"
"""The head's tensors (keys without the ``head.`` prefix)."""
HEAD_PREFIX = "head."


def file_hashes(folder: Path) -> dict[str, str]:
    """Relative path -> sha256 of every file under ``folder``."""
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def weights_file(files: dict[str, str], where: Path) -> str:
    """The one full-weights file among ``files`` (relative paths) with its config beside it:
    the model may sit in a subfolder of the directory a stage writes (``<out>/model/``)."""
    found = [rel for rel in files if Path(rel).name == FULL_WEIGHTS
             and (Path(rel).parent / CONFIG_FILE).as_posix() in files]
    if len(found) != 1:
        raise ValueError(f"{where}: not a full-weights value directory (needs one "
                         f"{FULL_WEIGHTS} with its {CONFIG_FILE}; found {len(found)})")
    return found[0]


def keep(model_dir: str | Path, dest: str | Path) -> Path:
    """Write the kept copy of the head-mode value at ``model_dir`` to ``dest`` (replaced
    whole); ValueError when the directory is not a full-weights value or its encoder is not
    the package's (restoring the copy would not give the original bytes)."""
    from safetensors.torch import load_file, save_file

    src, out = Path(model_dir), Path(dest)
    files = file_hashes(src)
    weights = weights_file(files, src)
    if any(Path(rel).name in (MANIFEST, KEPT_HEAD) for rel in files):
        raise ValueError(f"{src}: holds {MANIFEST} or {KEPT_HEAD} (a kept copy, not a value)")
    tensors = load_file(str(src / weights))
    head = {k.removeprefix(HEAD_PREFIX): v for k, v in tensors.items()
            if k.startswith(HEAD_PREFIX)}
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / weights).parent.mkdir(parents=True)
    save_file(head, str((tmp / weights).with_name(KEPT_HEAD)))
    for rel in files:
        if rel != weights:
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src / rel, tmp / rel)
    (tmp / MANIFEST).write_text(json.dumps({"format": 1, "files": files}, indent=1) + "\n")
    with tempfile.TemporaryDirectory() as scratch:
        try:
            restore(tmp, Path(scratch) / "check")
        except ValueError as e:
            shutil.rmtree(tmp)
            raise ValueError(f"{src}: cannot be kept as a head: {e}") from None
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out


def restore(kept: str | Path, model_dir: str | Path) -> Path:
    """Rebuild the value directory kept at ``kept`` into ``model_dir`` (which must not exist);
    ValueError, with nothing written, when any file's bytes differ from the original's."""
    from safetensors.torch import load_file, save_file

    src, out = Path(kept), Path(model_dir)
    if out.exists():
        raise FileExistsError(f"{out} exists: restore writes a new directory only")
    man = json.loads((src / MANIFEST).read_text())
    if man.get("format") != 1:
        raise ValueError(f"{src / MANIFEST}: unknown format {man.get('format')!r}")
    weights = weights_file(man["files"], src)
    meta = json.loads((src / weights).with_name(CONFIG_FILE).read_text())
    if meta.get("use_lora"):
        raise ValueError(f"{src}: a LoRA value keeps its adapter as it is; nothing to rebuild")
    model = build_model(ModelConfig.model_validate(meta["model"]))
    model.head.load_state_dict(load_file(str((src / weights).with_name(KEPT_HEAD))),
                               strict=True)
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        for rel in man["files"]:
            if rel != weights:
                (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src / rel, tmp / rel)
        save_file(model.weights_to_save()[FULL_WEIGHTS], str(tmp / weights))
        got = file_hashes(tmp)
        bad = sorted(k for k in set(got) | set(man["files"]) if got.get(k) != man["files"].get(k))
        if bad:
            raise ValueError(f"restored files differ from the kept value's: {bad}")
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    tmp.rename(out)
    return out
