"""SciWorld on the real ScienceWorld simulator: indexing, rewards, forks and the JVM pool."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pytest

from amc.envs.sciworld.env import (
    DONE_OBSERVATION,
    EXCLUDED_TASKS,
    INVALID_OBSERVATION,
    ReplayMismatchError,
    SciWorldOptions,
    SciWorldSuite,
    game_table,
)
from amc.envs.sciworld.sim import Simulator, SimulatorError
from amc.registry import ENVIRONMENTS
from amc.types import INVALID_ACTION, EnvStep

REPO = Path(__file__).resolve().parents[3]

# Paper test ids -> (ScienceWorld task id, task name, variation); documented in
# docs/envs-sciworld.md. One id per task type of the test split, plus the last id.
DOCUMENTED = {
    "536": ("2-1", "use-thermometer", 416),
    "995": ("2-2", "measure-melting-point-known-substance", 335),
    "1111": ("2-3", "measure-melting-point-unknown-substance", 15),
    "1816": ("3-3", "test-conductivity", 380),
    "2487": ("3-4", "test-conductivity-of-unknown-substances", 151),
    "3168": ("4-1", "find-living-thing", 232),
    "3464": ("4-2", "find-non-living-thing", 228),
    "3766": ("4-3", "find-plant", 230),
    "3861": ("4-4", "find-animal", 25),
    "4159": ("6-1", "chemistry-mix", 23),
    "4170": ("6-2", "chemistry-mix-paint-secondary-color", 2),
    "4283": ("7-1", "lifespan-longest-lived", 43),
    "4336": ("7-1", "lifespan-longest-lived", 96),
}
SHORT = "3464"  # find-non-living-thing: a 7-action gold path with dense milestones
LONG = "536"  # use-thermometer: 19 actions to the goal


@pytest.fixture(scope="module")
def sciworld() -> Iterator[SciWorldSuite]:
    """A SciWorld suite with at most 3 JVMs (about 1 GB), closed after this module.

    (Defined here rather than in tests/envs/conftest.py, which other environments share.)"""
    suite = SciWorldSuite(SciWorldOptions(pool_size=3))
    yield suite
    suite.close()


# -- no simulator needed ----------------------------------------------------------------------
def test_game_table_skips_excluded_tasks_and_keeps_order() -> None:
    games = game_table([("1-1", "boil", 2), ("5-1", "grow-plant", 3), ("1-2", "melt", 1)])
    assert [(g.index, g.task_id, g.variation) for g in games] == [
        (0, "1-1", 0), (1, "1-1", 1), (2, "1-2", 0)
    ]
    assert {"5-1", "9-3", "10-2"} <= EXCLUDED_TASKS


def test_registry_builds_suite_without_starting_a_jvm() -> None:
    suite = ENVIRONMENTS.build("sciworld", {"pool_size": 1})
    try:
        assert isinstance(suite, SciWorldSuite)
        test, train = suite.task_ids("test"), suite.task_ids("train")
        assert (len(test), len(train)) == (200, 1121)
        assert not set(test) & set(train)
        assert test[:3] == ["536", "537", "538"]
        assert suite.pool.live == 0
        with pytest.raises(ValueError, match="splits 'train' and 'test'"):
            suite.task_ids("valid")
    finally:
        suite.close()


def test_bad_options_and_missing_splits_fail_clearly(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="pool_size"):
        ENVIRONMENTS.validate("sciworld", {"pool_size": 0})
    suite = SciWorldSuite(SciWorldOptions(splits_dir=tmp_path))
    with pytest.raises(FileNotFoundError, match=r"sciworld_test_idx\.json"):
        suite.task_ids("test")
    suite.close()


def test_missing_java_is_a_one_line_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(SimulatorError, match="Java not found"):
        Simulator("-Xmx384m", 0)


# -- the real simulator -----------------------------------------------------------------------
@pytest.mark.slow
def test_paper_test_ids_map_to_documented_games(sciworld: SciWorldSuite) -> None:
    games = sciworld.games()
    assert len(games) == 4639
    assert not {g.task_id for g in games} & EXCLUDED_TASKS
    for tid, expected in DOCUMENTED.items():
        g = sciworld.game(tid)
        assert (g.task_id, g.task_name, g.variation) == expected, tid
    per_task = Counter(sciworld.game(t).task_id for t in sciworld.task_ids("test"))
    assert per_task == {
        "3-4": 52, "3-3": 31, "2-1": 25, "2-2": 23, "4-2": 17, "7-1": 15,
        "4-1": 11, "4-3": 9, "4-4": 7, "2-3": 5, "6-2": 4, "6-1": 1,
    }
    with pytest.raises(ValueError, match="out of range"):
        sciworld.game("4639")
    with pytest.raises(ValueError, match="integers"):
        sciworld.game("boil")


@pytest.mark.slow
def test_gold_path_reaches_score_100(sciworld: SciWorldSuite) -> None:
    env = sciworld.make()
    try:
        obs0 = env.reset(SHORT)
        assert obs0.startswith("Your task is to find a(n) non-living thing")
        assert "\nThis room is called the kitchen." in obs0  # description + look around
        steps = [env.step(a) for a in sciworld.gold_actions(SHORT)]
        assert steps[-1].done and not any(s.done for s in steps[:-1])
        assert steps[-1].info["score"] == 100
        assert sum(s.reward for s in steps) == pytest.approx(1.0)
        assert all(s.reward >= 0 for s in steps)
        after = env.step("look around")
        assert (after.observation, after.reward, after.done) == (DONE_OBSERVATION, 0.0, True)
    finally:
        env.close()


@pytest.mark.slow
def test_invalid_action_keeps_the_score(sciworld: SciWorldSuite) -> None:
    gold = sciworld.gold_actions(SHORT)
    env = sciworld.make()
    try:
        env.reset(SHORT)
        total = sum(env.step(a).reward for a in gold[:3])
        assert total == pytest.approx(0.17)
        bad = env.step(INVALID_ACTION)
        err = {"score": 17, "error": "invalid action"}
        assert bad == EnvStep(INVALID_OBSERVATION, 0.0, False, err)
        unknown = env.step("fly to the moon")  # the simulator's own answer, score unchanged
        assert unknown.observation == "No known action matches that input."
        assert (unknown.reward, unknown.info["score"]) == (0.0, 17)
        rest = [env.step(a) for a in gold[3:]]
        assert rest[-1].done and rest[-1].info["score"] == 100
        assert total + sum(s.reward for s in rest) == pytest.approx(1.0)
    finally:
        env.close()


@pytest.mark.slow
def test_failure_scores_minus_one_and_ends(sciworld: SciWorldSuite) -> None:
    env = sciworld.make()
    try:
        env.reset("0")  # boil, variation 0: focusing on a door fails the task
        s = env.step("focus on door to kitchen")
        assert (s.reward, s.done, s.info["score"]) == (-1.0, True, -100)
    finally:
        env.close()


@pytest.mark.slow
def test_step_limit_ends_the_episode(sciworld: SciWorldSuite) -> None:
    env = sciworld.make()
    try:
        env.reset(SHORT)
        steps = [env.step("look around") for _ in range(20)]
        assert not any(s.done for s in steps[:-1])
        assert steps[-1].done and steps[-1].info.get("truncated") is True
    finally:
        env.close()


@pytest.mark.slow
def test_fork_continues_identically_then_diverges(sciworld: SciWorldSuite) -> None:
    gold = sciworld.gold_actions(LONG)
    parent = sciworld.make()
    parent.reset(LONG)
    for a in gold[:5]:
        parent.step(a)
    child = parent.fork()
    try:
        for a in gold[5:8]:  # same actions, same answers (observation, reward, done, score)
            assert child.step(a) == parent.step(a)
        grandchild = child.fork()
        p = parent.step(gold[8])  # pick up unknown substance B (+3)
        c = child.step("go to kitchen")
        assert p.observation != c.observation and p.reward > 0 and c.reward == 0
        g = grandchild.step(gold[8])
        assert g == p  # the grandchild is unaffected by its parent's divergence
        assert "called the bathroom" in parent.step("look around").observation
        assert "called the kitchen" in child.step("look around").observation
        assert len(parent.records) == len(child.records) == 10 and len(grandchild.records) == 9
        grandchild.close()
        # Past a temperature reading, which drifts between loads without deterministic=True.
        for a in gold[9:18]:
            parent.step(a)
        assert "thermometer measures" in parent.records[-1].observation
        late = parent.fork()
        assert late.step("look around") == parent.step("look around")
        late.close()
    finally:
        parent.close()
        child.close()


@pytest.mark.slow
def test_replay_mismatch_is_a_clear_error(sciworld: SciWorldSuite) -> None:
    env = sciworld.make()
    try:
        env.reset(SHORT)
        env.step("open door to hallway")
        env.step("go to hallway")
        env.records = (replace(env.records[0], observation="The door is now closed."),
                       *env.records[1:])
        with pytest.raises(ReplayMismatchError, match=r"diverged at step 1 \('open door"):
            env.fork()
    finally:
        env.close()


@pytest.mark.slow
def test_released_simulator_is_reset_for_the_next_particle(sciworld: SciWorldSuite) -> None:
    first = sciworld.make()
    obs0 = first.reset(SHORT)
    first.step("open door to hallway")
    first.step("go to hallway")
    first.close()
    nxt = sciworld.make()
    try:
        assert nxt.reset(SHORT) == obs0
        assert "called the kitchen" in nxt.step("look around").observation
        assert nxt.valid_actions() is None  # off by default: the paper's prompts need none
        listing = SciWorldSuite(sciworld.options.model_copy(update={"enumerate_actions": True}))
        listing.pool.close()
        listing.pool = sciworld.pool  # share the session's simulators (no extra JVM)
        env = listing.make()
        env.reset(SHORT)
        actions = env.valid_actions()
        assert actions is not None and "open door to hallway" in actions
        env.close()
    finally:
        nxt.close()


@pytest.mark.slow
def test_pool_never_hands_one_simulator_to_two_particles(sciworld: SciWorldSuite) -> None:
    """Six particles on three JVMs, stepped concurrently, answer exactly as when run alone."""
    plans = [
        (SHORT, sciworld.gold_actions(SHORT)),
        (LONG, sciworld.gold_actions(LONG)[:7]),
        ("4283", ["open door to outside", "go to outside", "look around", "wait1"]),
    ] * 2

    def run_alone(plan: tuple[str, list[str]]) -> list[EnvStep]:
        env = sciworld.make()
        try:
            env.reset(plan[0])
            return [env.step(a) for a in plan[1]]
        finally:
            env.close()

    expected = [run_alone(p) for p in plans[:3]] * 2
    envs = [sciworld.make() for _ in plans]
    for env, (tid, _) in zip(envs, plans, strict=True):
        env.reset(tid)
    evictions0 = sciworld.pool.stats.evictions
    got: list[list[EnvStep]] = [[] for _ in plans]
    with ThreadPoolExecutor(len(plans)) as ex:
        for t in range(max(len(p[1]) for p in plans)):
            todo = [i for i, p in enumerate(plans) if t < len(p[1])]
            actions = [plans[i][1][t] for i in todo]
            results = ex.map(lambda i, a: envs[i].step(a), todo, actions)
            for i, s in zip(todo, results, strict=True):
                got[i].append(s)
            held = [e._lease.sim for e in envs if e._lease.sim is not None]
            assert len({id(s) for s in held}) == len(held)
    for env in envs:
        env.close()
    assert got == expected
    assert sciworld.pool.live <= 3 and sciworld.pool.stats.peak_live <= 3
    assert sciworld.pool.stats.evictions > evictions0  # particles really took turns


@pytest.mark.slow
def test_a_killed_jvm_is_replaced_by_replay(sciworld: SciWorldSuite) -> None:
    gold = sciworld.gold_actions(SHORT)
    env = sciworld.make()
    try:
        env.reset(SHORT)
        for a in gold[:4]:
            env.step(a)
        sim = env._lease.sim
        assert sim is not None
        os.kill(sim.pid, signal.SIGKILL)
        sim._env._gateway.java_process.wait(timeout=30)
        last = [env.step(a) for a in gold[4:]]  # rebuilt on another JVM, by replay
        assert last[-1].done and last[-1].info["score"] == 100
        assert env._lease.sim is not sim and sim not in sciworld.pool.simulators()
    finally:
        env.close()


@pytest.mark.slow
def test_close_stops_every_jvm() -> None:
    suite = SciWorldSuite(SciWorldOptions(pool_size=1))
    env = suite.make()
    env.reset(SHORT)
    (sim,) = suite.pool.simulators()
    pid = sim.pid
    suite.close()
    assert not sim.alive() and not _pid_alive(pid)
    with pytest.raises(SimulatorError, match="closed"):
        env.step("look around")


@pytest.mark.slow
@pytest.mark.parametrize("how", ["exit", "sigkill"])
def test_no_jvm_outlives_the_process(how: str) -> None:
    """At interpreter exit (atexit) and even after SIGKILL (py4j die_on_exit) the JVM goes."""
    script = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(REPO)!r})
        from amc.envs.sciworld.env import SciWorldOptions, SciWorldSuite
        suite = SciWorldSuite(SciWorldOptions(pool_size=1))
        env = suite.make()
        env.reset("{SHORT}")
        print(suite.pool.simulators()[0].pid, flush=True)
        if {how == "sigkill"!r}:
            time.sleep(600)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    pid = int(proc.stdout.readline())
    if how == "sigkill":
        assert _pid_alive(pid)
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    deadline = time.monotonic() + 30
    while _pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _pid_alive(pid)


def _pid_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"  # a zombie has exited
    except FileNotFoundError:
        return False


def test_sciworld_config_override_validates() -> None:
    from amc.config import RunConfig, load_yaml, validate

    cfg = validate(RunConfig, load_yaml(REPO / "configs" / "sciworld.yaml"))
    assert (cfg.env.name, cfg.smc.max_steps, cfg.smc.resample_steps) == ("sciworld", 20, (4, 12))
    opts = ENVIRONMENTS.validate("sciworld", cfg.env.options)
    assert isinstance(opts, SciWorldOptions) and opts.max_steps == 20


@pytest.mark.slow
async def test_driver_like_run_with_resampling_on_a_small_pool(sciworld: SciWorldSuite) -> None:
    """Five particles on three JVMs, stepped in threads, resampled twice: every survivor's
    record still replays exactly (its final fork is verified)."""
    import asyncio

    import numpy as np

    rng = np.random.default_rng(7)
    menu = ["look around", "open door to hallway", "go to hallway", "inventory", "wait1",
            "open door to kitchen", "go to kitchen", "pick up thermometer", "open door to bedroom"]
    envs = [sciworld.make() for _ in range(5)]
    await asyncio.gather(*(asyncio.to_thread(e.reset, SHORT) for e in envs))
    for t in range(1, 13):
        acts = [str(rng.choice(menu)) for _ in envs]
        await asyncio.gather(*(asyncio.to_thread(e.step, a) for e, a in zip(envs, acts,
                                                                             strict=True)))
        if t in (4, 8):
            parents = sorted(rng.integers(len(envs), size=len(envs)).tolist())
            counts = Counter(parents)
            new = []
            for i, e in enumerate(envs):
                if i not in counts:
                    e.close()
                    continue
                new.append(e)
                new += await asyncio.gather(
                    *(asyncio.to_thread(e.fork) for _ in range(counts[i] - 1))
                )
            envs = new
    assert len(envs) == 5 and all(len(e.records) == 12 for e in envs)
    for e in envs:
        (await asyncio.to_thread(e.fork)).close()  # raises ReplayMismatchError on any drift
        e.close()
    assert sciworld.pool.stats.peak_live <= 3
