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



POLICY_DESCRIPTION = ("LoRA adapters of the embedded model: GRPO policies (amc grpo) and behaviour "
                      "clones of the planner (amc sft); each version's description says which")


def ensure_policy_model(client: Any, name: str) -> None:
    """Create the registered model ``amc-policy-<env>`` once (GRPO and SFT versions share it)."""
    import mlflow

    try:
        client.get_registered_model(name)
    except mlflow.exceptions.MlflowException:
        client.create_registered_model(name, description=POLICY_DESCRIPTION)
