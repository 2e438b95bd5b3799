"""The content hash of a saved value model: its weights and its configuration, nothing else.

A model folder written by :func:`amc.value.train.train` also holds run records whose bytes
change on every retrain however identical the model (``metrics.json`` and the ``metrics``
of ``value_config.json`` carry wall times and throughput; a calibration plot; the path the
backbone was read from). :func:`model_hash` covers only what decides the model's answers:
every ``*.safetensors`` file (tensors, bit for bit) and every ``value_config.json`` with those
records removed, each under its path relative to the folder. A bit-identical retrain therefore
reproduces the hash recorded with each sweep cell; any changed weight or setting changes it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

WEIGHTS_SUFFIX = ".safetensors"
CONFIG_NAME = "value_config.json"
"""The model's saved configuration (:data:`amc.value.model.CONFIG_FILE`)."""
RECORDS = ("metrics",)
"""Keys of ``value_config.json`` that record a run rather than define the model."""
BACKBONE_RECORDS = ("_name_or_path",)
"""Keys of its ``backbone_config`` that say where the weights came from, not what they are."""


def model_config(path: Path) -> dict[str, Any]:
    """A saved ``value_config.json`` without its run records."""
    meta = {k: v for k, v in json.loads(path.read_text()).items() if k not in RECORDS}
    if isinstance(meta.get("backbone_config"), dict):
        meta["backbone_config"] = {k: v for k, v in meta["backbone_config"].items()
                                   if k not in BACKBONE_RECORDS}
    return meta


def model_hash(folder: str | Path) -> str:
    """16 hex digits over the weights and configuration under ``folder`` (see the module)."""
    root = Path(folder)
    files = sorted(p for p in root.rglob("*") if p.is_file()
                   and (p.suffix == WEIGHTS_SUFFIX or p.name == CONFIG_NAME))
    if not files:
        raise FileNotFoundError(f"no value model (weights or {CONFIG_NAME}) under {root}")
    h = hashlib.sha256()
    for p in files:
        body = (json.dumps(model_config(p), sort_keys=True, separators=(",", ":")).encode()
                if p.name == CONFIG_NAME else p.read_bytes())
        h.update(str(p.relative_to(root)).encode() + b"\0" + body + b"\0")
    return h.hexdigest()[:16]
