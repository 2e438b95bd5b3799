"""MLflow "models from code" definition of the value model's pyfunc (what ``mlflow models serve``
runs).

MLflow executes this file when it loads the model (no pickled Python objects are stored). The
``amc`` package it imports is logged with the model as ``code_paths`` (see
:func:`amc.value.registry.log_value_model`), so loading works where ``amc`` is not installed.

Input (the contract is in :mod:`amc.value.serve_io`): a DataFrame with a ``text`` column of
rendered states or a ``history`` column of trajectory JSON (rendered here with the model's own
render options and tokenizer), or a dict ``{"text": [...]}`` / ``{"history": [...]}`` (over
HTTP: any of MLflow's ``dataframe_split``/``dataframe_records``/``inputs`` encodings of these
columns). A plain list is rejected: MLflow's schema enforcement would turn it into an unnamed
column. ``predict`` is typed ``pd.DataFrame -> pd.DataFrame``: what MLflow hands it after enforcing
the logged signature (a dict input arrives as a DataFrame), and a type MLflow accepts without
inferring a second signature from it (no "Add type hints to predict" warning on log or load).
Output: a DataFrame with
``value`` (clipped into the reward range), ``raw`` and ``status`` per state. The reward range is
the logged ``model_config["reward_range"]``, else the model's environment default.

A malformed request (no usable column, a ``history`` row that is not JSON or lacks
``observation0``, a step without ``action``) raises :class:`BadRequest`: the server answers
HTTP 400 with one line of JSON (``{"error_code": "BAD_REQUEST", "message": ...}``), not a
stack trace and not MLflow's dump of the whole input.
"""

from __future__ import annotations

from typing import Any

import mlflow
import pandas as pd
from mlflow.exceptions import MlflowException
from mlflow.protos.databricks_pb2 import BAD_REQUEST
from mlflow.pyfunc import PythonModel


class BadRequest(MlflowException, ValueError):
    """A malformed request: served as HTTP 400 with a one-line message. The scoring server
    rewrites an error's ``message`` to prepend the whole input; this one keeps its own."""

    def __init__(self, err: BaseException) -> None:
        why = f"missing key {err.args[0]!r}" if isinstance(err, KeyError) else str(err)
        super().__init__(f"bad request: {' '.join(why.split())}", error_code=BAD_REQUEST)

    @property
    def message(self) -> str:
        return self._message

    @message.setter
    def message(self, value: str) -> None:
        if not hasattr(self, "_message"):  # set once, by __init__
            self._message = value


def _rows(model_input: Any) -> tuple[str, list[Any]]:
    """(column, rows) of a DataFrame or dict input with exactly one of the two columns."""
    from amc.value.serve_io import HISTORY_COL, TEXT_COL

    if hasattr(model_input, "columns"):  # pandas DataFrame
        cols = [c for c in (TEXT_COL, HISTORY_COL)
                if c in model_input.columns and model_input[c].notna().all()]
        if len(cols) != 1:
            raise ValueError(f"input needs exactly one of the columns {TEXT_COL!r} or "
                             f"{HISTORY_COL!r} (fully filled), got {list(model_input.columns)}")
        rows = model_input[cols[0]].tolist()
        if len(rows) == 1 and not isinstance(rows[0], str | dict):
            rows = list(rows[0])  # MLflow turns a dict of lists into ONE row holding the list
        return cols[0], rows
    if isinstance(model_input, dict):
        keys = [k for k in (TEXT_COL, HISTORY_COL) if k in model_input]
        if len(keys) != 1:
            raise ValueError(f"input dict needs exactly one key {TEXT_COL!r} or {HISTORY_COL!r}")
        return keys[0], list(model_input[keys[0]])
    raise ValueError(f"input must be a DataFrame or dict with a {TEXT_COL!r} or {HISTORY_COL!r} "
                     f"column, got {type(model_input).__name__}")


class ValuePyfunc(PythonModel):
    """Loads the safetensors checkpoint from the ``value_model`` artifact; predicts values."""

    def load_context(self, context: Any) -> None:
        from amc.value.model import load_model
        from amc.value.render import Renderer, RenderOptions
        from amc.value.serve_io import reward_range_for

        self.model, self.tokenizer, self.meta = load_model(context.artifacts["value_model"])
        self.model_dir = context.artifacts["value_model"]
        self.renderer = Renderer(RenderOptions.stored(self.meta["render"]),
                                 self.tokenizer)
        config = dict(getattr(context, "model_config", None) or {})
        self.lo, self.hi = reward_range_for({**self.meta, **config})

    def predict(self, context: Any, model_input: pd.DataFrame,
                params: dict[str, Any] | None = None) -> pd.DataFrame:
        from amc.value.model import predict_texts
        from amc.value.serve_io import HISTORY_COL, bound_values, history_from_json

        try:
            column, rows = _rows(model_input)
            texts = ([self.renderer(history_from_json(r)) for r in rows]
                     if column == HISTORY_COL else [str(t) for t in rows])
            batch = int((params or {}).get("batch_size", 64))
            if batch < 1:
                raise ValueError(f"params.batch_size must be >= 1, got {batch}")
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            raise BadRequest(err) from None
        raw = predict_texts(self.model, self.tokenizer, texts, batch)
        value, status = bound_values(raw, self.lo, self.hi)
        return pd.DataFrame({"value": value, "raw": raw, "status": status})


mlflow.models.set_model(ValuePyfunc())
