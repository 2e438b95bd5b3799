"""Session-wide test environment: no telemetry, offline models, temp state directories; and
the one way tests find the project's reference data (``shared_data``)."""

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

_TMP = tempfile.mkdtemp(prefix="amc-tests-")
atexit.register(shutil.rmtree, _TMP, ignore_errors=True)
for key, value in {
    "PREFECT_HOME": os.path.join(_TMP, "prefect"),
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "DO_NOT_TRACK": "true",
    "DVC_NO_ANALYTICS": "1",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "RAY_USAGE_STATS_ENABLED": "0",
    "TOKENIZERS_PARALLELISM": "false",
}.items():
    os.environ.setdefault(key, value)


SHARED_VARIABLE = "AMC_SHARED"
"""The one override of where the reference folder is (default <repo>/../shared, as in CI)."""


def shared_data_dir() -> Path:
    """``$AMC_SHARED/data``, else ``<repo>/../shared/data`` (may not exist)."""
    root = os.environ.get(SHARED_VARIABLE) or Path(__file__).resolve().parents[1].parent / "shared"
    return Path(root) / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The reference data folder (splits, TextCraft recipes, WebShop files); tests that need it
    skip where it is absent. Only tests read it: code in amc/ and flows/ never does."""
    d = shared_data_dir()
    if not d.is_dir():
        pytest.skip(f"reference data not present at {d} (set {SHARED_VARIABLE}=<shared folder>)")
    return d
