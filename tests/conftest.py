"""Session-wide test environment: no telemetry, offline models, temp state directories."""

import atexit
import os
import shutil
import tempfile

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
