"""MLflow "models from code" definition of the value model's pyfunc.

MLflow executes this file when it loads the model (no pickled Python objects are stored).
Input: a DataFrame with a ``text`` column of rendered states (or a list of strings); output:
one predicted future reward per state. The ``amc`` package must be importable where it loads.
"""

from __future__ import annotations

from typing import Any

import mlflow
from mlflow.pyfunc import PythonModel


class ValuePyfunc(PythonModel):
    """Loads the safetensors checkpoint from the ``value_model`` artifact; predicts values."""

    def load_context(self, context: Any) -> None:
        from amc.value.model import load_model

        self.model, self.tokenizer, self.meta = load_model(context.artifacts["value_model"])
        self.model_dir = context.artifacts["value_model"]

    def predict(self, context, model_input, params=None):
        import numpy as np

        from amc.value.model import predict_texts

        if hasattr(model_input, "columns"):
            texts = [str(t) for t in model_input["text"].tolist()]
        else:
            texts = [str(t) for t in model_input]
        batch = int((params or {}).get("batch_size", 64))
        return np.asarray(predict_texts(self.model, self.tokenizer, texts, batch), dtype=np.float64)


mlflow.models.set_model(ValuePyfunc())
