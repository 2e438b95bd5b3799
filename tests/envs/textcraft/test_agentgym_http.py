"""AgentGym client <-> `amc serve-env` over real HTTP on loopback."""

from __future__ import annotations

import threading

import httpx
import pytest
from fastapi.testclient import TestClient

from amc.envs.agentgym.client import AgentGymError, AgentGymOptions, AgentGymSuite, ReplayDivergence
from amc.envs.agentgym.server import create_app

pytestmark = pytest.mark.slow

PLAN = ["get 1 oak log", "craft 4 oak planks using 1 oak log", "get 1 oak log",
        "craft 4 oak planks using 1 oak log", "craft 4 stick using 2 oak planks"]
TAIL = ["craft 1 wooden pickaxe using 2 stick, 3 oak planks", "inventory"]


@pytest.fixture()
def client(textcraft_server: str):
    suite = AgentGymSuite(AgentGymOptions(base_url=textcraft_server, timeout_s=30))
    yield suite
    suite.close()


def live(url: str) -> list[int]:
    return httpx.get(url + "/list_envs").json()


def test_reset_step_observe_close(client: AgentGymSuite, textcraft_server: str) -> None:
    before = set(live(textcraft_server))
    env = client.make()
    obs = env.reset("wooden pickaxe")
    assert obs.startswith("Crafting commands:\n") and obs.endswith("Goal: craft wooden pickaxe.")
    r = env.step("get 2 oak log")
    assert (r.observation, r.reward, r.done) == ("Got 2 oak log", 0.0, False)
    detail = httpx.get(textcraft_server + "/detail", params={"id": env.env_id}).json()
    assert detail["observation"] == "Got 2 oak log" and detail["task_id"] == "wooden pickaxe"
    assert "craft 4 oak planks using 1 oak log" in env.valid_actions()
    assert env.suite.task_ids("test")[:3] == httpx.get(
        textcraft_server + "/task_ids", params={"split": "test"}).json()[:3]
    env.close()
    env.close()  # idempotent
    assert set(live(textcraft_server)) == before


@pytest.mark.parametrize("mode", ["server", "replay"])
def test_fork_continuations_match_in_process(textcraft_server: str, mode: str) -> None:
    from amc.envs.textcraft.env import TextCraftOptions, TextCraftSuite

    suite = AgentGymSuite(AgentGymOptions(base_url=textcraft_server, fork=mode))
    local = TextCraftSuite(TextCraftOptions()).make()
    try:
        env = suite.make()
        assert env.reset("wooden pickaxe") == local.reset("wooden pickaxe")
        for a in PLAN:
            assert env.step(a) == local.step(a)
        child, twin = env.fork(), local.fork()
        assert child.env_id != env.env_id
        cont = [child.step(a) for a in TAIL]
        assert cont == [twin.step(a) for a in TAIL]
        assert cont[0].done and cont[0].reward == 1.0
        # the parent is untouched by the child's steps
        r = env.step("inventory")
        assert "[stick] (4)" in r.observation and "wooden pickaxe" not in r.observation
        assert suite.server_fork is (mode == "server")
    finally:
        suite.close()
    assert suite.live == set()


def test_diverging_replay_raises_and_leaks_nothing(client: AgentGymSuite,
                                                   textcraft_server: str) -> None:
    before = set(live(textcraft_server))
    client.server_fork = False
    env = client.make()
    env.reset("stick")
    env.step("get 1 oak log")
    env.records[0] = type(env.records[0])("get 1 oak log", "Got 9 oak log", 0.0, False)
    with pytest.raises(ReplayDivergence, match="diverged at step 1"):
        env.fork()
    env.close()
    assert set(live(textcraft_server)) == before


def test_concurrent_particles_never_share_state(client: AgentGymSuite) -> None:
    root = client.make()
    root.reset("wooden pickaxe")
    root.step("get 1 oak log")
    kids = [root.fork() for _ in range(8)]
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            kids[i].step(f"get {i + 1} cobblestone")
            inv = kids[i].step("inventory").observation
            assert inv == f"Inventory: [oak log] (1) [cobblestone] ({i + 1}) ", inv
        except BaseException as err:  # collected: assertion errors in threads are lost
            errors.append(err)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert root.step("inventory").observation == "Inventory: [oak log] (1) "
    for k in kids:
        k.close()


@pytest.mark.parametrize(
    ("path", "body", "code"),
    [
        ("/step", {"id": 10**9, "action": "inventory"}, 404),
        ("/step", {"id": "abc", "action": "inventory"}, 422),
        ("/step", {"id": 0, "action": 5}, 422),
        ("/step", {"action": "inventory"}, 422),
        ("/reset", {"id": 10**9, "data_idx": 0}, 404),
        ("/fork", {"id": 10**9}, 404),
        ("/close", {"id": 10**9}, 404),
        ("/create", {"goal": "stick"}, 400),
    ],
)
def test_bad_requests_get_4xx_and_server_survives(
    textcraft_server: str, path: str, body: dict, code: int
) -> None:
    r = httpx.post(textcraft_server + path, json=body)
    assert r.status_code == code and r.json()["detail"]
    assert httpx.get(textcraft_server + "/").status_code == 200


def test_bad_task_and_step_before_reset(textcraft_server: str) -> None:
    i = httpx.post(textcraft_server + "/create", json={}).json()["id"]
    try:
        r = httpx.post(textcraft_server + "/step", json={"id": i, "action": "inventory"})
        assert r.status_code == 409 and "not been reset" in r.json()["detail"]
        r = httpx.post(textcraft_server + "/reset", json={"id": i, "data_idx": "unobtainium"})
        assert r.status_code == 400 and "not in the recipe book" in r.json()["detail"]
        r = httpx.get(textcraft_server + "/observation", params={"id": "x"})
        assert r.status_code == 422
    finally:
        httpx.post(textcraft_server + "/close", json={"id": i})


def test_client_errors_are_one_line(client: AgentGymSuite) -> None:
    env = client.make()
    with pytest.raises(AgentGymError, match="HTTP 400: bad task"):
        env.reset("unobtainium")
    assert env.env_id is None  # the server env was closed after the failed reset
    dead = AgentGymSuite(AgentGymOptions(base_url="http://127.0.0.1:9", retries=1,
                                         backoff_s=0.01))
    with pytest.raises(AgentGymError, match="ConnectError"):
        dead.make().reset("0")
    dead.close()


def test_env_limit_is_a_clear_429() -> None:
    with TestClient(create_app("textcraft", {"n_distractors": 0}, max_envs=2)) as tc:
        ids = [tc.post("/create", json={}).json()["id"] for _ in range(2)]
        r = tc.post("/create", json={})
        assert r.status_code == 429 and "limit 2" in r.json()["detail"]
        tc.post("/reset", json={"id": ids[0], "data_idx": "stick"})
        assert tc.post("/fork", json={"id": ids[0]}).status_code == 429
        tc.post("/close", json={"id": ids[1]})
        assert tc.post("/create", json={}).status_code == 200


def test_serve_env_rejects_unknown_names_and_bad_options() -> None:
    from typer.testing import CliRunner

    from amc.cli import app

    r = CliRunner().invoke(app, ["serve-env", "nosuch"])
    assert r.exit_code == 2 and "unknown environment 'nosuch'" in r.output
    r = CliRunner().invoke(app, ["serve-env", "textcraft", "-O", "reward=sparse"])
    assert r.exit_code == 2 and "reward" in r.output


def test_server_serves_any_registered_environment() -> None:
    with TestClient(create_app("synthetic", {"depth": 3})) as tc:
        i = tc.post("/create").json()["id"]  # no body, as the SciWorld/WebShop clients send
        assert tc.post("/reset", json={"id": i, "data_idx": 3}).json()["observation"] == (
            "You are at node /.")
        j = tc.post("/fork", json={"id": i}).json()["id"]
        assert tc.post("/step", json={"id": j, "action": "a1"}).json()["observation"] == (
            "You are at node /1.")
        assert tc.get("/observation", params={"id": i}).json() == "You are at node /."
        assert tc.get("/valid_actions", params={"id": i}).json() == ["a0", "a1", "a2"]
        assert tc.get("/task_ids", params={"split": "test"}).json()[:2] == ["0", "1"]
        assert tc.get("/task_ids", params={"split": "nope"}).status_code == 400
