"""Where a LoRA adapter for the ``hf`` prior lives: a folder or an MLflow registry URI.

``amc grpo`` registers its adapter folder as a version of ``amc-policy-<env>``; the ``hf``
prior's ``adapter`` option accepts that ``models:/<name>/<version>`` URI, a ``runs:/`` URI or
the folder itself, and gets a local copy through MLflow's artifact download.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any


def resolve_adapter(uri: str, tracking_uri: str | None = None) -> Path:
    """A local adapter folder for a local path, ``models:/<name>/<version>`` or ``runs:/``."""
    if re.match(r"^(models|runs):/", uri) is None:
        path = Path(uri).expanduser()
        if not (path / "adapter_config.json").is_file():
            raise FileNotFoundError(f"no LoRA adapter (adapter_config.json) in {uri}")
        return path
    import mlflow

    from amc.tracking import tracking_uri as resolve_uri

    mlflow.set_tracking_uri(resolve_uri(tracking_uri))
    if uri.startswith("models:/"):
        name, _, version = uri[len("models:/"):].partition("/")
        if not version:
            raise ValueError(f"give a version: models:/{name}/<version>")
        source = mlflow.MlflowClient().get_model_version(name, version).source
        local = Path(mlflow.artifacts.download_artifacts(artifact_uri=source))
    else:
        local = Path(mlflow.artifacts.download_artifacts(artifact_uri=uri))
    return resolve_adapter(str(local))


def merge_adapters(model: Any, uri: str, tracking_uri: str | None = None) -> Any:
    """``model`` with the adapter at ``uri`` merged into its weights, after the adapter it was
    trained on top of (``init_adapter`` in its ``policy.json``: GRPO started from an SFT
    version), so decoding costs what the frozen model costs."""
    from peft import PeftModel

    path = resolve_adapter(uri, tracking_uri)
    meta = path / "policy.json"
    init = json.loads(meta.read_text()).get("init_adapter") if meta.is_file() else None
    if init:
        model = merge_adapters(model, str(init), tracking_uri)
    return PeftModel.from_pretrained(model, path).merge_and_unload()


def load_base_lm(model: str, device: str, dtype: str, seed: int) -> tuple[Any, Any, Any]:
    """``(model, tokenizer, torch.device)`` of a base causal LM to put LoRA adapters on:
    ``embedded:<name>`` converts the bundled GGUF once; device ``auto`` = cuda when available;
    dtype ``auto`` = bfloat16 on a GPU, float32 on the CPU. torch is seeded *before* loading,
    so the LoRA initialisation that follows is the same for GRPO and SFT runs of one seed."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from amc.priors.hf import converted_model_dir

    path: str | Path = model
    if model.startswith("embedded:"):
        path = converted_model_dir(model.split(":", 1)[1])
    cuda = torch.cuda.is_available()
    dev = torch.device(device if device != "auto" else ("cuda" if cuda else "cpu"))
    dt = {"auto": torch.bfloat16 if dev.type == "cuda" else torch.float32,
          "float32": torch.float32, "bfloat16": torch.bfloat16}[dtype]
    torch.manual_seed(seed)  # LoRA's A matrices are initialised randomly
    tok = AutoTokenizer.from_pretrained(path)
    return AutoModelForCausalLM.from_pretrained(path, dtype=dt), tok, dev
