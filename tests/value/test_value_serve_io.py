"""The served head's wire contract and the remote value's handling of answers (no model needed).

The HTTP boundary is replaced by ``httpx.MockTransport`` here; the real ``mlflow models serve``
process is exercised in test_value_serving.py.
"""

from __future__ import annotations

import json
import math

import httpx
import pytest

from amc.priors.transport import PermanentError
from amc.registry import VALUES
from amc.types import History, Step
from amc.value.remote import RemoteValue, RemoteValueOptions
from amc.value.serve_io import (
    bound_values,
    history_from_json,
    history_to_json,
    invocations_body,
    parse_predictions,
    render_record,
    reward_range_for,
)

OBS0 = "Crafting commands:\ncraft item 3 using 2 planks\nGoal: craft item 3."
URL = "http://127.0.0.1:9/invocations"


def _history(n: int) -> History:
    h = History("3", OBS0)
    for t in range(n):
        h = h.extend(Step(f"Action: go {t}", f"go {t}", f"room {t}", float(t == 1), t == 1))
    return h


def test_history_json_round_trip_keeps_what_rendering_reads() -> None:
    h = _history(2)
    back = history_from_json(history_to_json(h))
    assert (back.task_id, back.observation0, back.actions) == (h.task_id, h.observation0,
                                                               h.actions)
    assert [(s.observation, s.reward, s.done) for s in back.steps] == [
        (s.observation, s.reward, s.done) for s in h.steps]
    with pytest.raises(ValueError, match="observation0"):
        history_from_json('{"steps": []}')
    assert back.budget is None and "budget" not in history_to_json(h)
    timed = history_from_json(history_to_json(History(h.task_id, h.observation0, h.steps,
                                                      budget=6)))
    assert (timed.budget, timed.steps_left) == (6, 4)


def test_render_record_final_and_all_states() -> None:
    rec = {"task_id": "3", "observation0": OBS0, "trajectories": [
        {"steps": [s.to_dict() for s in _history(2).steps]},
        {"steps": [s.to_dict() for s in _history(1).steps]}]}
    final = [history_from_json(r) for r in render_record(rec)]
    assert [h.t for h in final] == [2, 1]
    assert all(h.observation0 == OBS0 and h.task_id == "3" for h in final)
    every = [history_from_json(r) for r in render_record(rec, states="all")]
    assert [h.t for h in every] == [0, 1, 2, 0, 1]
    bare = {"task_id": "3", "observation0": OBS0, "steps": rec["trajectories"][0]["steps"]}
    assert render_record(bare) == render_record(rec)[:1]
    body = invocations_body(render_record(rec))
    assert body["dataframe_split"]["columns"] == ["history"]
    assert len(body["dataframe_split"]["data"]) == 2
    with pytest.raises(ValueError, match="input column"):
        invocations_body(["x"], column="prompt")
    # A record's step budget reaches every state (a budget-aware value renders steps left).
    timed = [history_from_json(r) for r in render_record({**rec, "budget": 5}, states="all")]
    assert [h.steps_left for h in timed] == [5, 4, 3, 5, 4]


def test_bound_values_clips_and_flags() -> None:
    value, status = bound_values([0.5, -0.2, 1.7, math.nan, math.inf, 0.0, 1.0], 0.0, 1.0)
    assert status == ["ok", "clipped", "clipped", "nonfinite", "nonfinite", "ok", "ok"]
    assert value[:3].tolist() == [0.5, 0.0, 1.0]
    assert math.isnan(value[3]) and value[4] == 1.0


def test_reward_range_defaults_and_override() -> None:
    assert reward_range_for({"env": "textcraft"}) == (0.0, 1.0)
    assert reward_range_for({"env": "sciworld"}) == (-1.0, 1.0)
    assert reward_range_for({"env": "sciworld", "reward_range": [0, 2]}) == (0.0, 2.0)
    with pytest.raises(ValueError, match="low < high"):
        reward_range_for({"reward_range": [1, 1]})


def test_parse_predictions_rejects_wrong_count_and_shape() -> None:
    ok = {"predictions": [{"value": 0.5, "raw": 0.5, "status": "ok"}]}
    assert parse_predictions(ok, 1) == ([0.5], [0.5], ["ok"])
    with pytest.raises(ValueError, match="1 predictions for 2 states"):
        parse_predictions(ok, 2)
    with pytest.raises(ValueError, match="lack"):
        parse_predictions({"predictions": [0.5]}, 1)


def test_options_reject_non_http_urls_and_unknown_keys() -> None:
    with pytest.raises(ValueError, match="http"):
        VALUES.validate("remote", {"url": "models:/amc-value-textcraft@champion"})
    with pytest.raises(ValueError, match="bogus"):
        VALUES.validate("remote", {"url": URL, "bogus": 1})


def _value(handler, **opts) -> tuple[RemoteValue, list[dict]]:
    seen: list[dict] = []

    def record(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        return handler(request, len(seen))

    options = RemoteValueOptions(url=URL, backoff_s=0.0, **opts)
    return RemoteValue(options, transport=httpx.MockTransport(record)), seen


def _answer(raws: list[float], lo: float = 0.0, hi: float = 1.0) -> httpx.Response:
    value, status = bound_values(raws, lo, hi)
    rows = [{"value": v, "raw": r, "status": s} for v, r, s in zip(value, raws, status,
                                                                     strict=True)]
    # json.dumps writes NaN as the bare token NaN, as the MLflow scoring server does
    return httpx.Response(200, content=json.dumps({"predictions": rows}),
                          headers={"content-type": "application/json"})


async def test_one_request_per_call_and_raw_vs_clipped() -> None:
    hs = [_history(0), _history(1), _history(2)]
    value, seen = _value(lambda req, n: _answer([0.25, 1.5, -0.5]))
    with pytest.warns(UserWarning, match="2 of 3 predictions outside"):
        assert await value.score(hs) == [0.25, 1.5, -0.5]
    assert len(seen) == 1 and [history_from_json(r[0]).t for r in
                               seen[0]["dataframe_split"]["data"]] == [0, 1, 2]
    clipped, _ = _value(lambda req, n: _answer([0.25, 1.5, -0.5]), use="clipped")
    with pytest.warns(UserWarning):
        assert await clipped.score(hs) == [0.25, 1.0, 0.0]
    assert clipped.stats["clipped"] == 2
    assert await value.score([]) == [] and len(seen) == 1
    await value.aclose()


async def test_non_finite_prediction_is_an_error() -> None:
    value, _ = _value(lambda req, n: _answer([0.1, math.nan]))
    with pytest.raises(ValueError, match="non-finite prediction nan for state 1 of 2"):
        await value.score([_history(0), _history(1)])


async def test_transient_errors_are_retried_and_4xx_is_permanent() -> None:
    def flaky(req: httpx.Request, n: int) -> httpx.Response:
        if n == 1:
            return httpx.Response(503, headers={"Retry-After": "0"}, text="busy")
        if n == 2:
            raise httpx.RemoteProtocolError("Server disconnected", request=req)
        return _answer([0.5])

    value, seen = _value(flaky)
    assert await value.score([_history(1)]) == [0.5]
    assert len(seen) == 3 and value.stats["retries"] == 2
    bad, seen_bad = _value(lambda req, n: httpx.Response(400, json={"message": "bad input"}))
    with pytest.raises(PermanentError, match=r"remote value .*\(400\).*bad input"):
        await bad.score([_history(1)])
    assert len(seen_bad) == 1
    down, seen_down = _value(lambda req, n: httpx.Response(503), max_retries=2)
    with pytest.raises(PermanentError, match="gave up after 2 retries"):
        await down.score([_history(1)])
    assert len(seen_down) == 3
