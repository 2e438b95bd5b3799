"""The client's SciWorld / WebShop dialects and its retry rules, against a scripted HTTP layer.

The upstream servers need Java or large product data, so these tests replace the network
(the true system boundary) with an ``httpx.MockTransport`` speaking their documented payloads.
"""

from __future__ import annotations

import json

import httpx
import pytest

from amc.envs.agentgym.client import AgentGymError, AgentGymOptions, AgentGymSuite


def suite_with(handler, **opts) -> AgentGymSuite:
    s = AgentGymSuite(AgentGymOptions(backoff_s=0.0, **opts))
    s.http = httpx.Client(base_url="http://test", transport=httpx.MockTransport(handler))
    return s


def test_sciworld_dialect_score_increments_and_close() -> None:
    calls: list[tuple[str, dict]] = []
    scores = iter([10, 10, 35])

    def handler(req: httpx.Request) -> httpx.Response:
        body = json.loads(req.content) if req.content else {}
        calls.append((req.url.path, body))
        if req.url.path == "/create":
            return httpx.Response(200, json={"id": 7})
        if req.url.path == "/reset":
            return httpx.Response(200, json={"task_description": "Boil water.",
                                             "observation": "You are in the kitchen."})
        if req.url.path == "/step":
            return httpx.Response(200, json={"observation": "ok", "reward": 0,
                                             "score": next(scores), "done": False})
        if req.url.path == "/close":
            return httpx.Response(200, json=True)
        return httpx.Response(404, json={"detail": "Not Found"})

    s = suite_with(handler, protocol="sciworld", fork="replay")
    env = s.make()
    assert env.reset("536") == "Boil water.\nYou are in the kitchen."
    assert ("/reset", {"id": 7, "data_idx": 536}) in calls
    assert [env.step(a).reward for a in ("look", "wait", "open door")] == pytest.approx(
        [0.10, 0.0, 0.25])
    assert env.valid_actions() is None
    env.close()
    assert ("/close", {"id": 7}) in calls and s.live == set()


def test_webshop_dialect_and_missing_close() -> None:
    def handler(req: httpx.Request) -> httpx.Response:
        body = json.loads(req.content) if req.content else {}
        if req.url.path == "/create":
            return httpx.Response(200, json=42)
        if req.url.path == "/reset":
            assert body == {"env_idx": 42, "session_id": 5}
            return httpx.Response(200, json=["WebShop [SEP] Instruction: [SEP] buy socks", None])
        if req.url.path == "/step":
            return httpx.Response(200, json={"state": "Thank you", "reward": 0.75, "done": True,
                                             "info": None})
        if req.url.path == "/available_actions":
            return httpx.Response(200, json={"has_search_bar": False,
                                             "clickables": ["buy now", "back to search"]})
        return httpx.Response(404, json={"detail": "Not Found"})  # no /close upstream

    s = suite_with(handler, protocol="webshop")
    env = s.make()
    assert env.reset("5").endswith("buy socks")
    assert env.valid_actions() == ["click[buy now]", "click[back to search]"]
    r = env.step("click[buy now]")
    assert (r.reward, r.done) == (0.75, True)
    env.close()
    assert s.live == set()


def test_retries_503_then_succeeds_and_gives_up_with_a_clear_error() -> None:
    n = {"create": 0}

    def handler(req: httpx.Request) -> httpx.Response:
        if req.url.path == "/create":
            n["create"] += 1
            if n["create"] < 3:
                return httpx.Response(503, text="busy")
            return httpx.Response(200, json={"id": 1})
        if req.url.path == "/reset":
            return httpx.Response(200, json={"observation": "start"})
        if req.url.path == "/step":
            raise httpx.ReadTimeout("slow", request=req)
        return httpx.Response(200, json=True)

    s = suite_with(handler, retries=3)
    env = s.make()
    assert env.reset("0") == "start" and n["create"] == 3
    with pytest.raises(AgentGymError, match="no answer within"):
        env.step("inventory")  # a step is never re-sent after a read timeout
    s.close()
    assert s.live == set()

    always_busy = suite_with(lambda req: httpx.Response(503, text="busy"), retries=2)
    with pytest.raises(AgentGymError, match="HTTP 503"):
        always_busy.make().reset("0")


def test_auto_fork_falls_back_to_verified_replay_without_a_fork_endpoint() -> None:
    """An upstream-style server (no /fork): the client replays on a new env and checks it."""
    envs: dict[int, list[str]] = {}

    def handler(req: httpx.Request) -> httpx.Response:
        body = json.loads(req.content) if req.content else {}
        if req.url.path == "/create":
            envs[len(envs)] = []
            return httpx.Response(200, json={"id": len(envs) - 1, "observation": ""})
        if req.url.path == "/reset":
            envs[body["id"]] = []
            return httpx.Response(200, json={"observation": "Goal: craft stick."})
        if req.url.path == "/step":
            envs[body["id"]].append(body["action"])
            return httpx.Response(200, json={"observation": f"seen {len(envs[body['id']])}",
                                             "reward": 0, "done": False})
        if req.url.path == "/close":
            return httpx.Response(200, json=True)
        return httpx.Response(404, json={"detail": "Not Found"})

    s = suite_with(handler)
    env = s.make()
    env.reset("3")
    env.step("get 1 oak log")
    env.step("inventory")
    child = env.fork()
    assert s.server_fork is False and child.env_id != env.env_id
    assert envs[child.env_id] == ["get 1 oak log", "inventory"]
    assert child.step("inventory").observation == "seen 3"
    s.close()
    assert s.live == set()
