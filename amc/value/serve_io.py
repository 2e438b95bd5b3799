"""The served value head's input/output contract (pure: no torch, no MLflow, no network).

A value head logged as an MLflow pyfunc (:mod:`amc.value.pyfunc_model`) is served by
``mlflow models serve``; clients talk to ``POST /invocations``. This module is the one place
that defines what goes over that wire, so the server, the ``remote`` value
(:mod:`amc.value.remote`) and any other client agree.

Input: one row per state, in one of two columns (a request uses one of them):

- ``text``: a state already rendered with the model's own :class:`RenderOptions` (the caller
  must know the prompt format);
- ``history``: a trajectory as JSON, ``{"task_id", "observation0", "steps": [{"action",
  "observation", "reward", "done"}, ...]}``; the *server* renders its last state with the
  model's training-time render options and tokenizer. Clients therefore need not know the
  prompt format: :func:`render_record` turns a results-file record of ``amc run`` into this
  form, and :func:`invocations_body` into a ready request body.

Output: one row per state with ``value`` (the predicted future reward f(s), clipped into the
reward range), ``raw`` (the model's unclipped output) and ``status``: ``"ok"``, ``"clipped"``
(``raw`` lay outside the range) or ``"nonfinite"`` (``raw`` was NaN/inf; ``value`` is NaN for
NaN and the range end for +-inf). Clients must not use a ``nonfinite`` row as a value.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np

from amc.envs.benchmarks import benchmark_in
from amc.types import History, Step

TEXT_COL = "text"
HISTORY_COL = "history"
OUTPUT_COLS = ("value", "raw", "status")


# ---------------------------------------------------------------- histories as JSON


def history_to_json(history: History) -> str:
    """The ``history`` column form of a particle's state (only what rendering reads)."""
    steps = [{"action": s.action, "observation": s.observation, "reward": s.reward,
              "done": s.done} for s in history.steps]
    d: dict[str, Any] = {"task_id": history.task_id, "observation0": history.observation0,
                         "steps": steps}
    if history.budget is not None:
        d["budget"] = history.budget
    return json.dumps(d, ensure_ascii=False, separators=(",", ":"))


def history_from_json(item: str | Mapping[str, Any]) -> History:
    """A :class:`History` from the ``history`` column (a JSON string or an already parsed dict)."""
    d = json.loads(item) if isinstance(item, str) else item
    if not isinstance(d, Mapping) or "observation0" not in d:
        raise ValueError("a 'history' row must be a JSON object with 'observation0' and 'steps'")
    steps = tuple(Step(str(s.get("raw_text", "")), str(s["action"]), str(s["observation"]),
                       float(s.get("reward", 0.0)), bool(s.get("done", False)))
                  for s in d.get("steps", d.get("turns", [])))
    budget = d.get("budget")
    return History(str(d.get("task_id", "")), str(d["observation0"]), steps,
                   budget=None if budget is None else int(budget))


def render_record(record: Mapping[str, Any],
                  states: Literal["final", "all"] = "final") -> list[str]:
    """``history`` rows for a results-file record of ``amc run`` (one JSON line).

    ``record`` is a per-task record ``{task_id, observation0, trajectories: [{steps}]}`` or one
    bare trajectory ``{task_id, observation0, steps}``. ``states="final"`` gives one row per
    trajectory (its last state); ``"all"`` one row per state of every trajectory (the initial
    state and each prefix), in order -- e.g. to plot a value curve along a trajectory.
    """
    tid, obs0 = record.get("task_id"), record.get("observation0")
    trajs = record.get("trajectories", [record])
    rows: list[str] = []
    for t in trajs:
        h = history_from_json({"task_id": t.get("task_id", tid),
                               "observation0": t.get("observation0", obs0),
                               "steps": t.get("steps", t.get("turns", [])),
                               "budget": t.get("budget", record.get("budget"))})
        cuts = range(len(h.steps) + 1) if states == "all" else [len(h.steps)]
        rows += [history_to_json(h.prefix(k)) for k in cuts]
    return rows


def invocations_body(rows: Sequence[str], column: str = HISTORY_COL) -> dict[str, Any]:
    """The JSON body of ``POST /invocations`` for ``rows`` of one input column."""
    if column not in (TEXT_COL, HISTORY_COL):
        raise ValueError(f"input column must be {TEXT_COL!r} or {HISTORY_COL!r}, got {column!r}")
    return {"dataframe_split": {"columns": [column], "data": [[r] for r in rows]}}


# ---------------------------------------------------------------- reward range and output


def reward_range_for(meta: Mapping[str, Any]) -> tuple[float, float]:
    """The model's reward range: ``meta["reward_range"]``, else its benchmark record's."""
    if meta.get("reward_range") is not None:
        lo, hi = (float(x) for x in meta["reward_range"])
    else:
        lo, hi = benchmark_in(meta.get("env")).reward_range
    if not lo < hi:
        raise ValueError(f"reward_range must be (low, high) with low < high, got {(lo, hi)}")
    return lo, hi


def bound_values(raw: Sequence[float], lo: float, hi: float) -> tuple[np.ndarray, list[str]]:
    """(values clipped into [lo, hi], status per value); see the module docstring."""
    arr = np.asarray(raw, dtype=np.float64)
    value = np.clip(arr, lo, hi)  # NaN stays NaN, +-inf go to the range ends
    status = ["nonfinite" if not math.isfinite(r) else "clipped" if (r < lo or r > hi) else "ok"
              for r in arr.tolist()]
    return value, status


def parse_predictions(payload: Any, n: int) -> tuple[list[float], list[float], list[str]]:
    """(value, raw, status) lists from a ``/invocations`` response body for ``n`` rows."""
    rows = payload.get("predictions") if isinstance(payload, Mapping) else None
    if not isinstance(rows, list) or len(rows) != n:
        got = len(rows) if isinstance(rows, list) else type(payload).__name__
        raise ValueError(f"value server answered {got} predictions for {n} states")
    try:
        return ([float(r["value"]) for r in rows], [float(r["raw"]) for r in rows],
                [str(r["status"]) for r in rows])
    except (KeyError, TypeError, ValueError):
        first = repr(rows[0])[:200]
        raise ValueError(f"value server predictions lack {OUTPUT_COLS}: {first}") from None
