"""A new AgentGym dialect needs no edit of the client: a toy benchmark registered from this test.

The toy server (an ``httpx.MockTransport``, the network being the system boundary) speaks a
dialect unlike the built-in ones: the env is named ``sid``, ``/create`` answers a bare integer,
``/reset {"sid", "level"}`` answers ``{"text"}``, ``/step`` wants upper-case moves and answers
``{"text", "points", "over"}``, there is no ``/close``, the menu is read from the observation
and ``STOP`` is forced after the agent's last step. Its :class:`AgentGymProtocol` record is the
``agentgym`` field of a :class:`Benchmark` record registered here, and nothing else.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pydantic
import pytest

from amc.config import SMCConfig
from amc.envs import benchmarks
from amc.envs.agentgym.client import AgentGymOptions, AgentGymSuite
from amc.envs.agentgym.protocol import AgentGymProtocol, Idx
from amc.envs.benchmark import Benchmark
from amc.envs.generic import PROMPTS, extract_instruction, normalise
from amc.priors.random_valid import RandomValidPrior
from amc.smc.sampler import run_task
from amc.types import EnvStep
from amc.value.simple import ZeroValue

GOAL = 3  # the toy's goal: climb GOAL levels above the start


class ToyServer:
    """Position on a ladder; UP/DOWN move, reaching start + GOAL scores 1, STOP scores 0.25."""

    def __init__(self) -> None:
        self.at: dict[int, tuple[int, int, bool]] = {}  # sid -> (start, position, over)
        self.calls: list[tuple[str, Any]] = []

    def text(self, sid: int) -> str:
        start, pos, over = self.at[sid]
        return "over" if over else f"at {pos} of {start + GOAL}; moves: up, down"

    def __call__(self, req: httpx.Request) -> httpx.Response:
        body = json.loads(req.content) if req.content else None
        self.calls.append((req.url.path, body))
        if req.url.path == "/create" and body is None:
            sid = 10 + len(self.at)
            self.at[sid] = (0, 0, False)
            return httpx.Response(200, json=sid)
        if req.url.path == "/reset":
            self.at[body["sid"]] = (body["level"], body["level"], False)
            return httpx.Response(200, json={"text": self.text(body["sid"])})
        if req.url.path == "/step":
            return httpx.Response(200, json=self.step(body["sid"], body["action"]))
        return httpx.Response(404, json={"detail": "Not Found"})

    def step(self, sid: int, move: str) -> dict[str, Any]:
        start, pos, over = self.at[sid]
        points = 0.0
        if not over:
            if move in ("UP", "DOWN"):
                pos += 1 if move == "UP" else -1
            over = move == "STOP" or pos == start + GOAL
            points = 1.0 if pos == start + GOAL else 0.25 if move == "STOP" else 0.0
        self.at[sid] = (start, pos, over)
        return {"text": self.text(sid), "points": points, "over": over}


def toy_step(data: Any, score: float) -> tuple[EnvStep, float]:
    return EnvStep(data["text"], data["points"], data["over"]), score + data["points"]


def toy_menu(env: Any) -> list[str] | None:
    last = env.records[-1].observation if env.records else env.observation0
    return last.split("moves: ", 1)[1].split(", ") if "moves: " in last else []


def toy_reset(env_id: int, idx: Idx) -> dict[str, Any]:
    return {"sid": env_id, "level": idx}


TOY = Benchmark("toy-ladder", PROMPTS, normalise, extract_instruction, agentgym=AgentGymProtocol(
    id_key="sid", create_body=False, reset_body=toy_reset, read_reset=lambda d: d["text"],
    send_action=str.upper, read_step=toy_step, close_may_be_missing=True,
    valid_actions=toy_menu, final_action=lambda env: "STOP"))


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> ToyServer:
    monkeypatch.setattr(benchmarks, "_TABLE", dict(benchmarks._TABLE))  # undone after the test
    benchmarks.register_benchmark(TOY)
    return ToyServer()


def suite_with(server: ToyServer) -> AgentGymSuite:
    s = AgentGymSuite(AgentGymOptions(protocol="toy-ladder", backoff_s=0.0, fork="auto"))
    s.http = httpx.Client(base_url="http://test", transport=httpx.MockTransport(server))
    return s


def test_an_unregistered_dialect_is_refused_clearly() -> None:
    with pytest.raises(pydantic.ValidationError, match="unknown AgentGym protocol 'toy-ladder'"):
        AgentGymOptions(protocol="toy-ladder")


def test_the_client_speaks_a_dialect_registered_from_outside(toy: ToyServer) -> None:
    s = suite_with(toy)
    env = s.make()
    assert env.reset("2") == "at 2 of 5; moves: up, down"
    assert ("/create", None) in toy.calls and ("/reset", {"sid": 10, "level": 2}) in toy.calls
    assert env.valid_actions() == ["up", "down"] and env.final_action() == "STOP"
    assert [env.step(a).reward for a in ("up", "up")] == [0.0, 0.0]
    assert toy.calls[-1] == ("/step", {"sid": 10, "action": "UP"})
    child = env.fork()  # no /fork on this server: a verified replay in a fresh server env
    assert s.server_fork is False and child.env_id == 11 and child.score == env.score
    r = child.step("up")
    assert (r.observation, r.reward, r.done) == ("over", 1.0, True) and child.score == 1.0
    assert child.final_action() is None and child.valid_actions() == []
    child.close()
    env.close()  # no /close on this server: accepted, the envs are forgotten
    assert s.live == set()
    s.close()


def test_the_driver_forces_the_dialects_final_action(toy: ToyServer) -> None:
    s = suite_with(toy)
    smc = SMCConfig(n_particles=2, max_steps=2, resample="fixed", resample_steps=(1,))
    res = asyncio.run(run_task(suite=s, prior=RandomValidPrior(), value=ZeroValue(),
                               task_id="0", smc=smc, seed=1, method="smc@2"))
    s.close()
    final = [t for t in res.trajectories if t.slot is not None]
    assert len(final) == 2
    for t in final:  # two agent moves (never the goal, 3 up), then the forced STOP
        assert [st.action for st in t.steps][-1] == "STOP" and t.steps[-1].info["forced"]
        assert len(t.steps) == 3 and t.steps[-1].reward == 0.25 and t.steps[-1].done
