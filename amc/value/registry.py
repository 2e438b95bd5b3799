"""Value models in the MLflow model registry: log as pyfunc, register, alias, load.

A trained model directory (safetensors weights -- LoRA adapter + head only for decoder LMs --
plus ``value_config.json`` with the render options, and the tokenizer) is logged as an MLflow
pyfunc (models-from-code, :mod:`amc.value.pyfunc_model`; signature and input example; explicit
pip requirements so logging does not spawn a requirements-inference subprocess) and registered
as ``amc-value-<env>`` with the alias ``challenger``. Promotion moves the ``champion`` alias
(:func:`set_alias`).

:func:`resolve_model_dir` turns ``models:/amc-value-textcraft@champion``, ``models:/<id>``,
``runs:/...``, an MLflow model directory or a plain model directory into a local directory that
:func:`amc.value.model.load_model` reads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from amc.value.model import CONFIG_FILE

ARTIFACT_KEY = "value_model"
PYFUNC_FILE = Path(__file__).with_name("pyfunc_model.py")


def registered_name(env: str) -> str:
    """Registry name of an environment's value model (MLflow rejects ``/ : . %``)."""
    safe = re.sub(r"[^A-Za-z0-9_-]+", "-", env).strip("-") or "generic"
    return f"amc-value-{safe}"


def pip_requirements() -> list[str]:
    """Pinned requirements of the pyfunc (versions of this environment; torch without +cpu)."""
    from importlib.metadata import version

    pkgs = ["torch", "transformers", "safetensors", "peft", "numpy", "pandas", "mlflow"]
    return [f"{p}=={version(p).split('+')[0]}" for p in pkgs]


@dataclass(frozen=True)
class LoggedValueModel:
    """Where a logged value model lives."""

    model_uri: str
    name: str
    version: str | None  # None when not registered


def log_value_model(model_dir: str | Path, *, env: str, register: bool = True,
                    alias: str = "challenger", input_example: list[str] | None = None,
                    name: str = "value_model") -> LoggedValueModel:
    """Log ``model_dir`` as a pyfunc (in the active run, if any) and optionally register it."""
    import mlflow
    import numpy as np
    import pandas as pd
    from mlflow.models import infer_signature

    texts = input_example or ["(example state)"]
    example = pd.DataFrame({"text": texts})
    signature = infer_signature(example, np.zeros(len(texts), dtype=np.float64))
    info = mlflow.pyfunc.log_model(
        name=name, python_model=str(PYFUNC_FILE), artifacts={ARTIFACT_KEY: str(model_dir)},
        signature=signature, input_example=example, pip_requirements=pip_requirements())
    reg = registered_name(env)
    if not register:
        return LoggedValueModel(info.model_uri, reg, None)
    mv = mlflow.register_model(info.model_uri, reg)
    set_alias(reg, alias, str(mv.version))
    return LoggedValueModel(info.model_uri, reg, str(mv.version))


def set_alias(name: str, alias: str, version: str) -> None:
    """Point ``models:/<name>@<alias>`` at ``version`` (e.g. promote to ``champion``)."""
    import mlflow

    mlflow.MlflowClient().set_registered_model_alias(name, alias, version)


def _find_model_dir(root: Path) -> Path | None:
    if (root / CONFIG_FILE).is_file():
        return root
    hits = sorted(p.parent for p in root.rglob(CONFIG_FILE))
    return hits[0] if hits else None


def resolve_model_dir(uri: str, tracking_uri: str | None = None) -> Path:
    """A local value-model directory for a registry/run URI or a local path."""
    scheme = re.match(r"^([A-Za-z][\w+.-]+):/", uri)  # models:/, runs:/, file://, s3://...
    if scheme is None or scheme.group(1) == "file":
        local = Path(uri[len("file://"):]) if scheme else Path(uri)
        if not local.exists():
            raise FileNotFoundError(f"value model not found: {uri}")
        found = _find_model_dir(local)
        if found is None:
            raise FileNotFoundError(f"no {CONFIG_FILE} under {uri}: not a value model")
        return found
    import mlflow

    from amc.tracking import tracking_uri as resolve_uri

    store = resolve_uri(tracking_uri)
    db = Path(store[len("sqlite:///"):]) if store.startswith("sqlite:///") else None
    if db is not None and not db.is_file():  # opening it would create an empty store here
        raise FileNotFoundError(f"cannot load value model {uri!r}: no MLflow store at {db} "
                                "(set MLFLOW_TRACKING_URI to the store that registered it)")
    mlflow.set_tracking_uri(store)
    try:
        local = Path(mlflow.artifacts.download_artifacts(artifact_uri=uri))
    except mlflow.exceptions.MlflowException as err:
        raise ValueError(f"cannot load value model {uri!r}: {err.message}") from None
    found = _find_model_dir(local)
    if found is None:
        raise FileNotFoundError(f"{uri} holds no {CONFIG_FILE}: not an AMC value model")
    return found
