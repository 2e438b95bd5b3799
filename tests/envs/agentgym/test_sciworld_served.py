"""SciWorld served by `amc serve-env sciworld` and driven through the AgentGym client.

Heavy (JVMs): a small pool (2 simulators), one task, few steps. The server's JVMs are listed
from /proc while it runs; after a graceful stop none of them may still be alive, and an
in-process run may leave no JVM behind either.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from amc.cli import app
from amc.envs.agentgym.client import AgentGymOptions, AgentGymSuite

pytestmark = pytest.mark.slow
runner = CliRunner()
OPTIONS = {"pool_size": 2, "enumerate_actions": True}
TASK = "536"  # a paper test id: 2-1 use-thermometer, variation 416


def wait_gone(tools, pids: set[int], timeout: float = 30) -> set[int]:
    """The pids of ``pids`` still alive after up to ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while tools.alive(pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    return tools.alive(pids)


@pytest.fixture(scope="module")
def sciworld_url(proc_tools) -> Iterator[str]:
    server = proc_tools.start_server("sciworld", OPTIONS, max_envs=16)
    try:
        yield server.url
    finally:
        server.stop()


def test_client_reset_step_fork_close(sciworld_url: str) -> None:
    url = sciworld_url
    s = AgentGymSuite(AgentGymOptions(base_url=url, backoff_s=0.05))
    replaying = AgentGymSuite(AgentGymOptions(base_url=url, backoff_s=0.05, fork="replay"))
    try:
        env = s.make()
        obs0 = env.reset(TASK)
        assert "thermometer" in obs0.split("\n")[0] and "This room is called" in obs0
        assert env.final_action() is None  # SciWorld forces nothing
        menu = env.valid_actions()
        assert menu and "look around" in menu
        assert "open door" in menu and "pick up unknown substance" in menu
        env.step("open door to kitchen")  # the start of the task's gold path
        r = env.step("go to kitchen")
        assert "You move to the kitchen" in r.observation and not r.done
        forked = env.fork()  # server /fork: the served env's verified replay
        assert s.server_fork is True and forked.env_id != env.env_id
        other = replaying.make()
        other.reset(TASK)
        for rec in env.records:
            other.step(rec.action)
        replayed = other.replay_fork()  # the client's own verified replay
        nxt = ["look around", "pick up thermometer", "focus on thermometer in inventory"]
        want = [(x.observation, x.reward, x.done) for x in map(env.step, nxt)]
        for e in (forked, replayed):
            assert [(x.observation, x.reward, x.done) for x in map(e.step, nxt)] == want
        for e in (env, forked, other, replayed):
            e.close()
        assert httpx.get(url + "/list_envs").json() == []
    finally:
        s.close()
        replaying.close()


def records(path: Path) -> dict[str, list[list[tuple[str, str, float]]]]:
    out = {}
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        out[rec["task_id"]] = [[(st["action"], st["observation"], st["reward"])
                                for st in t["steps"]] for t in rec["trajectories"]]
    return out


def test_amc_run_over_http_matches_in_process_and_no_jvm_survives(tmp_path, proc_tools) -> None:
    t = proc_tools
    args = ["run", "--prior", "random-valid", "-m", "react,smc@2", "--steps", "4",
            "--resample-steps", "2", "--max-tasks", "1", "--quiet"]
    before = t.java_descendants(os.getpid())
    local = tmp_path / "local"
    r = runner.invoke(app, [*args, "--env", "sciworld", "--out", str(local),
                            "-S", "env.options.pool_size=2",
                            "-S", "env.options.enumerate_actions=true"])
    assert r.exit_code == 0, r.output
    assert wait_gone(t, t.java_descendants(os.getpid()) - before) == set()  # suite closed them

    server = t.start_server("sciworld", OPTIONS, max_envs=16)  # a fresh one: count its JVMs
    try:
        remote = tmp_path / "remote"
        r = runner.invoke(app, [*args, "--env", "agentgym", "--out", str(remote),
                                "-S", f"env.options.base_url={server.url}"])
        assert r.exit_code == 0, r.output
        jvms = t.java_descendants(server.proc.pid)
        assert 1 <= len(jvms) <= OPTIONS["pool_size"]
        server.proc.send_signal(signal.SIGTERM)  # graceful: the lifespan closes the pool
        server.proc.wait(60)
        assert wait_gone(t, jvms) == set()
    finally:
        server.stop()
    for m in ("react", "smc@2"):
        want = records(local / f"{m}__seed0.jsonl")
        assert want and records(remote / f"{m}__seed0.jsonl") == want
