"""The client against a scripted upstream AgentGym WebShop server, including the forced buy.

The real server needs Java, Lucene and the product data, so the network (the true system
boundary) is an ``httpx.MockTransport`` speaking its payloads: ``/create`` -> int,
``/reset {"env_idx", "session_id"}`` -> ``[obs, null]``, ``/step {"env_idx", "action"}`` ->
``{"state", "reward", "done", "info": null}``, ``/available_actions``, and no ``/close``,
``/fork`` or ``/final_action``. Actions are parsed server-side with WebShop's own pattern.
"""

from __future__ import annotations

import asyncio
import json
import re

import httpx

from amc.config import SMCConfig
from amc.envs.agentgym.client import AgentGymOptions, AgentGymSuite
from amc.priors.random_valid import RandomValidPrior
from amc.smc.sampler import run_task
from amc.value.simple import ZeroValue

PAGES = {  # page -> clickables (lower-cased, as upstream)
    "search": ["search"],
    "results": ["back to search", "next >", "b0001", "b0002"],
    "item": ["back to search", "< prev", "small", "large", "description", "buy now"],
}


class UpstreamWebShop:
    """A tiny deterministic stand-in for agentenv-webshop's HTTP surface."""

    def __init__(self) -> None:
        self.page: dict[int, str] = {}
        self.actions: dict[int, list[str]] = {}
        self.paths: list[str] = []

    def __call__(self, req: httpx.Request) -> httpx.Response:
        body = json.loads(req.content) if req.content else {}
        self.paths.append(req.url.path)
        if req.url.path == "/create":
            i = 100 + len(self.page)
            self.page[i], self.actions[i] = "search", []
            return httpx.Response(200, json=i)
        if req.url.path == "/reset":
            self.page[body["env_idx"]], self.actions[body["env_idx"]] = "search", []
            return httpx.Response(200, json=[self.obs(body["env_idx"]), None])
        if req.url.path == "/available_actions":
            i = int(req.url.params["env_idx"])
            return httpx.Response(200, json={"has_search_bar": self.page[i] == "search",
                                             "clickables": PAGES.get(self.page[i], [])})
        if req.url.path == "/step":
            i, action = body["env_idx"], body["action"]
            self.actions[i].append(action)
            reward = self.act(i, action)
            return httpx.Response(200, json={"state": self.obs(i), "reward": reward,
                                             "done": self.page[i] == "done", "info": None})
        return httpx.Response(404, json={"detail": "Not Found"})

    def obs(self, i: int) -> str:
        return f"WebShop [SEP] Instruction: [SEP] buy socks [SEP] {self.page[i]}"

    def act(self, i: int, action: str) -> float:
        m = re.match(r"(.+)\[(.+)\]", action)  # WebShop's parse_action: no stripping
        if m is None or self.page[i] == "done":
            return 0.0
        name, arg = m.group(1), m.group(2).lower()
        if name == "search" and self.page[i] == "search":
            self.page[i] = "results"
        elif name == "click" and arg in PAGES.get(self.page[i], []):
            if arg == "buy now":
                self.page[i] = "done"
                return 0.75
            self.page[i] = {"back to search": "search", "b0001": "item", "b0002": "item",
                            "< prev": "results"}.get(arg, self.page[i])
        return 0.0


def suite_with(server: UpstreamWebShop, **opts) -> AgentGymSuite:
    s = AgentGymSuite(AgentGymOptions(protocol="webshop", backoff_s=0.0, **opts))
    s.http = httpx.Client(base_url="http://test", transport=httpx.MockTransport(server))
    return s


def test_bare_actions_menu_and_forced_buy() -> None:
    server = UpstreamWebShop()
    s = suite_with(server)
    env = s.make()
    env.reset("5")
    assert env.final_action() == "click[Buy Now]"  # the reference client's forced action
    assert env.valid_actions() == ["search[<keywords>]"]  # as the in-process env
    env.step("  search[socks]\n")
    env.step(" click[B0001] ")
    assert server.actions[env.env_id] == ["search[socks]", "click[B0001]"]  # sent bare
    assert env.valid_actions() == [f"click[{c}]" for c in PAGES["item"]]
    r = env.step(env.final_action())
    assert (r.reward, r.done) == (0.75, True) and server.actions[env.env_id][-1] == "click[Buy Now]"
    assert env.final_action() is None  # done: nothing more is forced
    assert "/final_action" not in server.paths  # the webshop dialect never asks for it
    s.close()

    off = suite_with(UpstreamWebShop(), forced_buy=False).make()
    off.reset("5")
    assert off.final_action() is None


def test_driver_forces_the_buy_over_the_webshop_dialect() -> None:
    """SMC with 2 particles on the upstream dialect: replay forks, then the forced buy."""
    server = UpstreamWebShop()
    s = suite_with(server)  # fork auto: no /fork upstream -> verified replay
    smc = SMCConfig(n_particles=2, max_steps=2, resample="fixed", resample_steps=(1,))
    res = asyncio.run(run_task(suite=s, prior=RandomValidPrior(), value=ZeroValue(),
                               task_id="5", smc=smc, seed=2, method="smc@2"))
    s.close()
    final = [t for t in res.trajectories if t.slot is not None]
    assert len(final) == 2 and s.server_fork is False
    for t in final:
        last = t.steps[-1]
        assert len(t.steps) == 3 and last.action == "click[Buy Now]" and last.info["forced"]
        assert last.raw_text == ""  # no agent turn
        # the buy scores (and ends) only on an item page (step 2 clicked a product)
        on_item = t.steps[1].action in ("click[b0001]", "click[b0002]")
        assert (last.reward, last.done) == ((0.75, True) if on_item else (0.0, False))
    # seed 2: one particle bought from an item page, the other clicked elsewhere
    assert sorted(t.steps[-1].reward for t in final) == [0.0, 0.75]


def test_a_server_without_final_action_forces_nothing_and_is_asked_once() -> None:
    """An upstream TextCraft-dialect server has no /final_action: a 404, then no more asks."""
    paths: list[str] = []

    def handler(req: httpx.Request) -> httpx.Response:
        paths.append(req.url.path)
        if req.url.path == "/create":
            return httpx.Response(200, json={"id": len(paths)})
        if req.url.path == "/reset":
            return httpx.Response(200, json={"observation": "Goal: craft stick."})
        return httpx.Response(404, json={"detail": "Not Found"})

    s = AgentGymSuite(AgentGymOptions(backoff_s=0.0))
    s.http = httpx.Client(base_url="http://test", transport=httpx.MockTransport(handler))
    envs = [s.make() for _ in range(3)]
    for e in envs:
        e.reset("0")
    assert [e.final_action() for e in envs] == [None, None, None]
    assert paths.count("/final_action") == 1 and s.has_final_action is False
