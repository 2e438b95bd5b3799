"""The value pyfunc logs and loads without MLflow's "Add type hints to predict" warning (its
``predict`` is typed), and the loaded model still predicts what the checkpoint predicts."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from amc.value.model import load_model, predict_texts

pytestmark = pytest.mark.slow

TEXTS = ["Predict the future reward.\n\n=== NOW ===\n[STATE] You walk into a clear open road.",
         "The episode is over."]


def _type_hint_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if "Add type hints" in str(w.message)]


def test_log_and_load_emit_no_type_hint_warning(trained, tmp_path: Path) -> None:
    import mlflow
    import pandas as pd

    from amc.tracking import sqlite_uri
    from amc.value.registry import log_value_model

    mlflow.set_tracking_uri(sqlite_uri(tmp_path / "mlflow.db"))
    mlflow.set_experiment("pyfunc-hints")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # MLflow's own "once" filter must not hide a repeat
        with mlflow.start_run():
            logged = log_value_model(trained.model_dir, env="textcraft", register=False,
                                     torch_index=None)
        pf = mlflow.pyfunc.load_model(logged.model_uri)
        out = pf.predict(pd.DataFrame({"text": TEXTS}))
    assert _type_hint_warnings(caught) == []
    model, tok, _ = load_model(trained.model_dir)
    assert out["raw"].tolist() == pytest.approx(predict_texts(model, tok, TEXTS), abs=1e-6)
    assert list(out.columns) == ["value", "raw", "status"]
