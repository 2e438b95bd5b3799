"""The AgentGym client against a server shaped like AgentGym's reference TextCraft server.

The reference server (agentenv-textcraft) has only ``/create``, ``/reset``, ``/step``,
``/observation``, ``/detail`` and ``/close``: no ``/fork``, no ``/valid_actions``, no
``/task_ids``, and it answers a failure with HTTP 200 and ``{"error": ...}``. The app below
speaks that protocol over the in-process TextCraft env (exact parser, as the reference) on a
free loopback port, run by uvicorn in a thread, and logs every request so the tests can count
the client's probes.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import uvicorn
from fastapi import Body, FastAPI, Request
from typer.testing import CliRunner

from amc.cli import app as cli_app
from amc.config import SMCConfig
from amc.envs.agentgym.client import AgentGymOptions, AgentGymSuite
from amc.envs.textcraft.env import TextCraftOptions, TextCraftSuite
from amc.ports import free_port
from amc.priors.random_valid import NoValidActionsError, RandomValidPrior
from amc.smc.sampler import run_task
from amc.types import INVALID_ACTION
from amc.value.simple import ZeroValue

pytestmark = pytest.mark.slow


def reference_app(suite: TextCraftSuite, log: list[tuple[str, int]]) -> FastAPI:
    """The reference protocol over ``suite``; appends (path, status) of each request to log."""
    app = FastAPI()
    envs: dict[int, Any] = {}
    next_id = itertools.count()  # ids are never reused, as the reference's _max_id
    lock = threading.Lock()

    @app.middleware("http")
    async def record(request: Request, call_next):
        resp = await call_next(request)
        log.append((request.url.path, resp.status_code))
        return resp

    def env_of(i: int) -> Any:
        with lock:
            if i not in envs:
                raise ValueError(f"The id {i} is not valid.")
            return envs[i]

    @app.post("/create")
    def create(body: dict = Body(default={})) -> dict[str, Any]:
        with lock:
            i = next(next_id)
            envs[i] = suite.make()
        obs = envs[i].reset(str(i))  # the reference resets a new env to data_idx = its id
        return {"id": i, "observation": obs, "done": False, "reward": 0}

    @app.post("/reset")
    def reset(body: dict = Body(...)) -> dict[str, Any]:
        try:
            obs = env_of(body["id"]).reset(str(int(body["data_idx"])))
        except (ValueError, KeyError) as err:
            return {"error": str(err)}
        return {"id": body["id"], "observation": obs, "done": False, "reward": 0}

    @app.post("/step")
    def step(body: dict = Body(...)) -> dict[str, Any]:
        try:
            r = env_of(body["id"]).step(body["action"])
        except ValueError as err:
            return {"error": str(err)}
        return {"observation": r.observation, "reward": r.reward, "done": r.done}

    @app.get("/observation")
    def observation(id: int) -> Any:
        return env_of(id).observation0

    @app.post("/close")
    def close(body: dict = Body(...)) -> bool:
        with lock:
            envs.pop(body["id"], None)
        return True

    return app


@contextlib.contextmanager
def serve(app: FastAPI) -> Iterator[str]:
    """``app`` on a free loopback port (uvicorn in a daemon thread); yields the base URL."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "test server did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


OPTIONS = {"n_distractors": 10}  # the in-process defaults: minecraft-data recipes, exact parser


@pytest.fixture(scope="module")
def local() -> TextCraftSuite:
    return TextCraftSuite(TextCraftOptions(**OPTIONS))


@pytest.fixture(scope="module")
def reference(local: TextCraftSuite) -> Iterator[tuple[str, list[tuple[str, int]]]]:
    log: list[tuple[str, int]] = []
    with serve(reference_app(local, log)) as url:
        yield url, log


def count(log: list[tuple[str, int]], path: str) -> int:
    return sum(p == path for p, _ in log)


def test_concurrent_first_forks_probe_fork_once_and_all_replay(local, reference) -> None:
    """N threads fork at once on a fresh client: one /fork probe, N verified replays."""
    url, log = reference
    s = AgentGymSuite(AgentGymOptions(base_url=url, backoff_s=0.0))
    task = str(local.tasks.goals.index("minecraft:wooden_pickaxe"))
    n = 8
    parents = [s.make() for _ in range(n)]
    for i, env in enumerate(parents):
        env.reset(task)
        env.step(f"get {i + 1} oak log")
    before = count(log, "/fork")
    barrier, children, errors = threading.Barrier(n), [None] * n, []

    def fork(i: int) -> None:
        barrier.wait()
        try:
            children[i] = parents[i].fork()
        except Exception as err:  # collected: a thread's exception would be lost
            errors.append(repr(err))

    threads = [threading.Thread(target=fork, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    assert count(log, "/fork") - before == 1 and s.server_fork is False
    for i, child in enumerate(children):
        assert child is not None and child.env_id != parents[i].env_id
        assert child.step("inventory").observation == f"Inventory: [oak log] ({i + 1}) "
    s.close()


def test_derived_valid_actions_equal_the_in_process_menu(local, reference) -> None:
    """No /valid_actions: the client's menu from the listed commands and its steps equals the
    in-process env's at every step, and every listed action succeeds on the server."""
    url, log = reference
    s = AgentGymSuite(AgentGymOptions(base_url=url, fork="replay"))
    task = str(local.tasks.goals.index("minecraft:wooden_pickaxe"))
    remote, mirror = s.make(), local.make()
    assert remote.reset(task) == mirror.reset(task)
    plan = ["get 1 oak log", "get 0 oak log", "craft 4 oak planks using 1 oak log",
            "Get 1 oak log", "get 1 oak log", "craft 4 oak planks using 1 oak log",
            "craft 4 stick using 2 oak planks", "inventory",
            "craft 1 wooden pickaxe using 3 oak planks, 2 stick"]
    for action in plan:
        menu = remote.valid_actions()
        assert menu == mirror.valid_actions() and menu and "inventory" in menu
        for a in menu:  # each listed action succeeds (probed on a replayed copy)
            probe = remote.fork()
            obs = probe.step(a).observation
            assert obs.startswith(("Got", "Crafted", "Inventory")), (a, obs)
            probe.close()
        a, b = remote.step(action), mirror.step(action)
        assert (a.observation, a.reward, a.done) == (b.observation, b.reward, b.done)
    assert remote.done and remote.valid_actions() == []
    assert count(log, "/valid_actions") == 1  # a 404 once, then derived without asking
    s.close()


def test_random_valid_bon_and_smc_through_the_reference_server(local, reference,
                                                               tmp_path) -> None:
    """The issue's scenario: random-valid, bon@4 and smc@4 with `--env agentgym` against a
    server with neither /fork nor /valid_actions: no forced fallback, no invalid action, and
    the same trajectories as in process."""
    url, _ = reference
    runner = CliRunner()
    tasks = local.task_ids("test")[:4]
    args = ["run", "--prior", "random-valid", "-m", "bon@4,smc@4", "--steps", "8",
            "--resample-steps", "2", "--quiet"]
    r = runner.invoke(cli_app, [*args, "--env", "textcraft", "--max-tasks", "4",
                                "--out", str(tmp_path / "local")])
    assert r.exit_code == 0, r.output
    r = runner.invoke(cli_app, [
        *args, "--env", "agentgym", "--out", str(tmp_path / "remote"),
        "-S", f"env.options.base_url={url}", "-S", f"env.options.task_ids={{test: {tasks}}}"])
    assert r.exit_code == 0, r.output
    for m in ("bon@4", "smc@4"):
        remote = trajectories(tmp_path / "remote" / f"{m}__seed0.jsonl")
        assert set(remote) == set(tasks)
        steps = [s for runs in remote.values() for run in runs for s in run]
        assert steps and all(a != INVALID_ACTION for a, _, _ in steps)
        assert remote == trajectories(tmp_path / "local" / f"{m}__seed0.jsonl")


def trajectories(path) -> dict:
    """task id -> the (action, observation, reward) sequences of its trajectories."""
    out = {}
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        out[rec["task_id"]] = [
            [(s["action"], s["observation"], s["reward"]) for s in t["steps"]]
            for t in rec["trajectories"]
        ]
    return out


def test_random_valid_fails_fast_where_no_actions_can_be_listed() -> None:
    """SciWorld's dialect over an upstream server lists no actions: the first proposal raises
    a one-line error and no action reaches the server (was: [invalid action] every step)."""
    paths: list[str] = []

    def handler(req: httpx.Request) -> httpx.Response:
        paths.append(req.url.path)
        if req.url.path == "/create":
            return httpx.Response(200, json={"id": 0})
        if req.url.path == "/reset":
            return httpx.Response(200, json={"task_description": "Boil water.",
                                             "observation": "You are in the kitchen."})
        if req.url.path == "/close":
            return httpx.Response(200, json=True)
        return httpx.Response(404, json={"detail": "Not Found"})

    s = AgentGymSuite(AgentGymOptions(protocol="sciworld", fork="replay"))
    s.http = httpx.Client(base_url="http://test", transport=httpx.MockTransport(handler))
    smc = SMCConfig(n_particles=1, max_steps=3, resample="never")
    with pytest.raises(NoValidActionsError, match="random-valid needs the environment's valid"):
        asyncio.run(run_task(suite=s, prior=RandomValidPrior(), value=ZeroValue(),
                             task_id="536", smc=smc, seed=0, method="react"))
    assert "/step" not in paths
    s.close()
