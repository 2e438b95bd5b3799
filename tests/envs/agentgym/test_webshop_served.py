"""WebShop served by `amc serve-env webshop` and driven through the AgentGym client.

The client (protocol textcraft, the dialect `serve-env` speaks) must reproduce the in-process
environment exactly: scripted episodes, forks (server /fork and verified replay), the forced
buy the driver asks for via ``final_action()``, and whole `amc run` results.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from amc.cli import app
from amc.envs.agentgym.client import AgentGymOptions, AgentGymSuite
from amc.envs.webshop.env import WebShopOptions, WebShopSuite
from amc.registry import PRIORS
from amc.types import AgentTurn, History, Usage

runner = CliRunner()


@pytest.fixture(scope="module")
def local(webshop_catalog: Path) -> WebShopSuite:
    return WebShopSuite(WebShopOptions(data_dir=str(webshop_catalog)))


def client(url: str, **opts) -> AgentGymSuite:
    return AgentGymSuite(AgentGymOptions(base_url=url, backoff_s=0.05, **opts))


def goal_script(local: WebShopSuite) -> tuple[str, list[str]]:
    """A task with a colour and size to choose, and the actions that buy its goal exactly."""
    for i, g in enumerate(local.catalog.goals):
        if isinstance(g["goal_options"], dict) and set(g["goal_options"]) == {"color", "size"}:
            title = local.catalog.by_asin[g["asin"]]["Title"]
            clicks = [f"click[{v}]" for v in g["goal_options"].values()]
            return str(i), [f"search[{title}]", f"click[{g['asin'].lower()}]", *clicks,
                            "click[Buy Now]"]
    raise AssertionError("the fixture catalog has no two-option goal")


def play(env, task: str, actions: list[str]) -> list[tuple[str, float, bool]]:
    env.reset(task)
    return [(r.observation, r.reward, r.done) for r in map(env.step, actions)]


def test_scripted_episode_reaches_the_in_process_reward(webshop_server, local) -> None:
    task, actions = goal_script(local)
    want = play(local.make(), task, actions)
    s = client(webshop_server)
    try:
        env = s.make()
        assert env.reset(task) == local.make().reset(task)
        assert env.valid_actions() == ["search[<keywords>]"]
        assert env.available_actions() == {"has_search_bar": True, "clickables": ["search"]}
        assert env.final_action() == "click[buy now]"  # the served env's forced buy
        got = [(r.observation, r.reward, r.done) for r in map(env.step, actions)]
        assert got == want and got[-1][1:] == (pytest.approx(1.0), True)
        assert env.final_action() is None  # the episode is over: nothing is forced
        env.close()
    finally:
        s.close()
    assert s.live == set()


@pytest.mark.parametrize("fork", ["server", "replay"])
def test_forks_continue_identically(webshop_server, local, fork: str) -> None:
    task, actions = goal_script(local)
    want = play(local.make(), task, actions)
    s = client(webshop_server, fork=fork)
    try:
        parent = s.make()
        parent.reset(task)
        for a in actions[:2]:  # on the goal's item page
            parent.step(a)
        child = parent.fork()
        assert child.env_id != parent.env_id
        for env in (child, parent):  # each continues on its own, from the same state
            rest = [(r.observation, r.reward, r.done) for r in map(env.step, actions[2:])]
            assert rest == want[2:]
        # a fork of a fork taken before the buy is still on the item page: the forced buy scores
        s2 = s.make()
        s2.reset(task)
        s2.step(actions[0])
        s2.step(actions[1])
        grandchild = s2.fork().fork()
        final = grandchild.final_action()
        r = grandchild.step(final)
        assert final == "click[buy now]" and r.done and 0 < r.reward < 1  # no options chosen
    finally:
        s.close()
    assert s.live == set()


class _Shopper:
    """Test prior: searches the instruction, then clicks uniformly (reaches item pages)."""

    wants_valid_actions = True

    async def propose(self, history: History, rng: np.random.Generator) -> AgentTurn:
        menu = [a for a in history.valid_actions or () if a != "click[back to search]"]
        if "search[<keywords>]" in menu:
            m = re.search(r"Instruction: \[SEP\] (.*?) \[SEP\]", history.observation)
            action = f"search[{m.group(1) if m else 'shirt'}]"
        elif menu:
            action = menu[int(rng.integers(len(menu)))]
        else:
            action = "[invalid action]"
        return AgentTurn(raw_text=f"Action: {action}", action=action, usage=Usage(calls=1))

    async def aclose(self) -> None:
        pass


if "test-webshop-shopper" not in PRIORS.names():
    PRIORS.register("test-webshop-shopper")(lambda **_: _Shopper())


def runs(path: Path) -> dict[str, list[list[tuple[str, str, float]]]]:
    """task id -> the (action, observation, reward) sequences of its trajectories."""
    out = {}
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        out[rec["task_id"]] = [[(s["action"], s["observation"], s["reward"]) for s in t["steps"]]
                               for t in rec["trajectories"]]
    return out


@pytest.mark.slow
@pytest.mark.parametrize("prior", ["random-valid", "test-webshop-shopper"])
def test_amc_run_over_http_matches_in_process(
    tmp_path, webshop_server, webshop_catalog, prior: str
) -> None:
    args = ["run", "--prior", prior, "-m", "react,smc@4", "--steps", "4", "--resample-steps",
            "2", "--max-tasks", "3", "--quiet"]
    outs = {k: tmp_path / k for k in ("local", "server-fork", "replay-fork")}
    r = runner.invoke(app, [*args, "--env", "webshop", "--out", str(outs["local"]),
                            "-S", f"env.options.data_dir={webshop_catalog}"])
    assert r.exit_code == 0, r.output
    for name, fork in (("server-fork", "server"), ("replay-fork", "replay")):
        r = runner.invoke(app, [*args, "--env", "agentgym", "--out", str(outs[name]),
                                "-S", f"env.options.base_url={webshop_server}",
                                "-S", f"env.options.fork={fork}"])
        assert r.exit_code == 0, r.output
    for m in ("react", "smc@4"):
        want = runs(outs["local"] / f"{m}__seed0.jsonl")
        for name in ("server-fork", "replay-fork"):
            assert runs(outs[name] / f"{m}__seed0.jsonl") == want, (m, name)
        # every final particle ends with a buy: its own, or the forced one after step 4
        final = [t["steps"] for rec in records(outs["local"] / f"{m}__seed0.jsonl")
                 for t in rec["trajectories"] if t["slot"] is not None]
        assert final and all(st[-1]["action"] == "click[buy now]" for st in final)
        forced = [st[-1] for st in final if st[-1]["info"].get("forced")]
        assert forced and all(len(st) == 5 for st in final if st[-1]["info"].get("forced"))
        if prior == "test-webshop-shopper":  # a forced buy on an item page scores
            assert max(f["reward"] for f in forced) > 0


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]
