"""SciWorld (ScienceWorld) in-process, with the AgentGym server's task indexing and scores.

**Games.** A task id is the AgentGym SciWorld server's ``data_idx``: an index into the list
of every (task, variation) pair of ScienceWorld, in the package's task order (``1-1`` boil,
``1-2`` melt, ...) and variation order, leaving out the tasks ``5-1 5-2 9-1 9-2 9-3 10-1
10-2``. With ``scienceworld==1.2.3`` the list has 4639 games; the paper's test ids
(``sciworld_test_idx.json``, 200 ids in 536..4336) pick e.g. ``536 -> (2-1
use-thermometer, variation 416)``. :func:`game_table` gives the whole mapping.

**Episode.** ``reset`` loads the game and runs ``look around``; the initial observation is
the task description, a newline and the look-around text (as the AgentGym client builds it).
Each step answers the simulator's observation. The paper's reward is the cumulative score /
100 (0..1, -1 on failure); ``EnvStep.reward`` is its per-step increment, so rewards sum to
the final score / 100. Score -100 (a failed task) ends the episode. So does success, and the
step limit (default 20). An unparsable action (:data:`~amc.types.INVALID_ACTION`, or empty
text) and a step after the end get an error observation and reward 0 and **keep the score**
(the reference client reset it to 0 on any error). ``info`` has ``score`` (0..100).

**Forking** is verified replay (ScienceWorld has no save/load): the fork loads the same game
on a pooled simulator, replays the recorded actions and checks that every observation and
score is the recorded one, raising :class:`ReplayMismatchError` otherwise. ``restore(history)``
(the :class:`~amc.protocols.RestoresHistory` ability, which the rollout value forks through)
takes a particle's history as the record without touching a simulator: the next use (a fork)
replays it with the same checks, the initial observation included. Simulators come
from the suite's bounded :class:`~amc.envs.sciworld.sim.SimulatorPool` (see there); a
particle whose simulator was lent to another particle rebuilds it the same way.

Registered as environment ``sciworld``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pydantic import Field

from amc.config import Frozen
from amc.envs.benchmark import packaged_split
from amc.envs.sciworld.sim import (
    Py4JError,
    Py4JJavaError,
    Simulator,
    SimulatorError,
    SimulatorPool,
)
from amc.protocols import RestoresHistory
from amc.registry import ENVIRONMENTS
from amc.types import INVALID_ACTION, EnvStep, History, Step

EXCLUDED_TASKS = frozenset({"5-1", "5-2", "9-1", "9-2", "9-3", "10-1", "10-2"})
"""ScienceWorld task ids the AgentGym SciWorld server leaves out of its game list."""

DETERMINISTIC_JAVA_OPTIONS = "-XX:+UnlockExperimentalVMOptions -XX:hashCode=2"
"""HotSpot flags giving every object the same identity hash code (see module docs)."""
INVALID_OBSERVATION = "Invalid action! Please check the available actions and try again."
DONE_OBSERVATION = "The task is over; no further actions are possible."
T = TypeVar("T")


class SciWorldOptions(Frozen):
    """Options of the in-process SciWorld environment."""

    max_steps: int = Field(20, ge=1)
    """Step limit of an episode (paper: 20); the step that reaches it ends the episode."""
    simplification: str = ""
    """ScienceWorld simplifications, comma separated (AgentGym and the paper use none: "")."""
    java_options: str = "-Xmx384m"
    """JVM options for each simulator (added to JAVA_TOOL_OPTIONS); caps the heap."""
    deterministic: bool = True
    """Constant JVM identity hash codes, so a game replays identically (see module docs)."""
    pool_size: int = Field(16, ge=1)
    """Most simulator JVMs alive at once (~340 MB each); more particles take turns by replay."""
    enumerate_actions: bool = False
    """Whether valid_actions() lists every valid action (100-600 ms, often 400-3000 actions);
    off, it returns None: the paper's SciWorld prompts show no action menu."""
    acquire_timeout_s: float = Field(600.0, gt=0)
    """How long a step may wait for a simulator when every one is busy."""
    splits_dir: Path | None = None
    """Folder with sciworld_{train,test}_idx.json (JSON lists of game indices); default: the
    paper's split shipped with the package (amc/envs/sciworld/paper_splits.json)."""


@dataclass(frozen=True)
class Game:
    """One (task, variation) pair of ScienceWorld, at index ``index`` of the AgentGym list."""

    index: int
    task_id: str  # ScienceWorld's "2-1"
    task_name: str  # "use-thermometer"
    variation: int


class ReplayMismatchError(RuntimeError):
    """A replayed fork did not reproduce the recorded observations or scores."""


@dataclass(frozen=True)
class _Record:
    """One step as recorded, what a replay must reproduce. ``sent``: reached the simulator."""

    action: str
    observation: str
    score: int
    sent: bool


def _record_of(step: Step, i: int) -> _Record:
    """The record of a history's step: the simulator answered it unless it was an error."""
    score = step.info.get("score")
    if not isinstance(score, int | float) or not float(score).is_integer():
        raise ValueError(f"step {i + 1} of a SciWorld history has no integer info['score']")
    return _Record(step.action.strip(), step.observation, int(score), "error" not in step.info)


def game_table(variations: list[tuple[str, str, int]]) -> list[Game]:
    """The AgentGym game list from (task id, task name, variation count) in package order."""
    games: list[Game] = []
    for task_id, name, n in variations:
        if task_id not in EXCLUDED_TASKS:
            games += [Game(len(games) + i, task_id, name, i) for i in range(n)]
    return games


class SciWorldEnv(RestoresHistory):
    """One SciWorld episode; its state is the record of steps, its simulator a leased cache."""

    io_bound = True

    def __init__(self, suite: SciWorldSuite) -> None:
        self.suite = suite
        self.options = suite.options
        self._lease = suite.pool.lease()
        self.game: Game | None = None
        self.task_description = ""
        self._look0 = ""  # the look-around text after loading, checked by replays
        self.records: tuple[_Record, ...] = ()
        self.score = 0  # 0..100, or -100 after a failure; the reward so far is score / 100
        self.done = False
        self._valid: tuple[int, list[str]] | None = None  # (len(records), actions)

    # -- protocol ---------------------------------------------------------------------------
    def reset(self, task_id: str) -> str:
        game = self.suite.game(task_id)
        self.game, self.records, self.score, self.done = game, (), 0, False
        self._valid = None

        def load(sim: Simulator) -> None:
            self.task_description = sim.load(game.task_name, game.variation, self._simpl)
            self._look0, _, _ = sim.step("look around")

        self._use(load, rebuild=False)
        return f"{self.task_description}\n{self._look0}"

    def step(self, action: str) -> EnvStep:
        if self.game is None:
            raise RuntimeError("reset() the SciWorld environment before step()")
        if self.done:
            return EnvStep(DONE_OBSERVATION, 0.0, True, {"score": self.score, "error": "done"})
        action = action.strip()
        if action == INVALID_ACTION or not action:
            return self._record(_Record(action, INVALID_OBSERVATION, self.score, False), False)
        try:
            obs, score, completed = self._use(lambda sim: sim.step(action))
        except Py4JJavaError as err:  # the simulator threw: answer it like an invalid action
            msg = str(err).strip().splitlines()[0][:200] if str(err).strip() else "error"
            rec = _Record(action, f"{INVALID_OBSERVATION} ({msg})", self.score, False)
            return self._record(rec, False)
        return self._record(_Record(action, obs, score, True), completed or score < 0)

    def fork(self) -> SciWorldEnv:
        child = SciWorldEnv(self.suite)
        child.game, child.task_description = self.game, self.task_description
        child._look0 = self._look0
        child.records, child.score, child.done = self.records, self.score, self.done
        if child.game is not None:
            try:
                child._use(lambda sim: None)  # load and replay now, verifying every answer
            except BaseException:
                child.close()
                raise
        return child

    def restore(self, history: History) -> None:
        """Take ``history`` as this episode's record; the next use replays and checks it."""
        desc, sep, look = history.observation0.partition("\n")
        if not sep:
            raise ValueError("a SciWorld history starts with the task description, a newline "
                             "and the look-around text")
        self.game, self.task_description, self._look0 = self.suite.game(history.task_id), desc, look
        self.records = tuple(_record_of(s, i) for i, s in enumerate(history.steps))
        self.score = self.records[-1].score if self.records else 0
        self.done, self._valid = history.done, None
        self._lease.pool.release(self._lease)  # a simulator it held is stale now
        self._lease = self.suite.pool.lease()

    def valid_actions(self) -> list[str] | None:
        if not self.options.enumerate_actions:
            return None
        if self.game is None or self.done:
            return []
        if self._valid is None or self._valid[0] != len(self.records):  # cached per state
            self._valid = (len(self.records), self._use(lambda sim: sim.valid_actions()))
        return list(self._valid[1])

    def close(self) -> None:
        self._lease.pool.release(self._lease)

    # -- internals --------------------------------------------------------------------------
    @property
    def _simpl(self) -> str:
        return self.options.simplification

    def _record(self, rec: _Record, ended: bool) -> EnvStep:
        self.records = (*self.records, rec)
        reward = (rec.score - self.score) / 100.0
        self.score = rec.score
        truncated = len(self.records) >= self.options.max_steps
        self.done = ended or truncated
        info: dict[str, object] = {"score": rec.score}
        if not rec.sent:
            info["error"] = "invalid action"
        if truncated and not ended:
            info["truncated"] = True
        return EnvStep(rec.observation, reward, self.done, info)

    def _use(self, fn: Callable[[Simulator], T], rebuild: bool = True) -> T:
        """Run ``fn`` on this particle's simulator, rebuilding its state first if it is fresh.

        A simulator whose JVM died is dropped and the operation retried once on another one
        (rebuilt by replay); after any other error the simulator is given up, because its
        state is unknown, and the next operation rebuilds one.
        """
        pool, lease = self.suite.pool, self._lease
        for attempt in (0, 1):
            sim, fresh = pool.pin(lease)
            try:
                if fresh and rebuild:
                    self._rebuild(sim)
                out = fn(sim)
            except Py4JJavaError:  # the simulator threw; its state is unknown
                pool.unpin(lease, drop="idle")
                raise
            except Py4JError as err:  # py4j lost the JVM (a network error, or a call on a dead one)
                pool.unpin(lease, drop="close")
                if attempt:
                    raise SimulatorError(f"the ScienceWorld simulator failed: {err}") from err
                continue
            except BaseException:
                pool.unpin(lease, drop="idle")
                raise
            pool.unpin(lease)
            return out
        raise AssertionError("unreachable")

    def _rebuild(self, sim: Simulator) -> None:
        """Load the game on ``sim`` and replay the record, checking every answer."""
        assert self.game is not None
        g = self.game
        where = f"SciWorld game {g.index} ({g.task_id} {g.task_name} v{g.variation})"
        desc = sim.load(g.task_name, g.variation, self._simpl)
        look, _, _ = sim.step("look around")
        if desc != self.task_description or look != self._look0:
            raise ReplayMismatchError(f"replay of {where} differs at the initial observation")
        for i, rec in enumerate(self.records):
            if not rec.sent:
                continue
            try:
                obs, score, _ = sim.step(rec.action)
            except Py4JJavaError as err:  # it answered when recorded, so this is a divergence
                raise ReplayMismatchError(
                    f"replay of {where} failed at step {i + 1} ({rec.action!r}): {err}"
                ) from err
            if obs != rec.observation or score != rec.score:
                raise ReplayMismatchError(
                    f"replay of {where} diverged at step {i + 1} ({rec.action!r}): "
                    f"expected score {rec.score} and {rec.observation[:60]!r}, "
                    f"got score {score} and {obs[:60]!r}"
                )


class SciWorldSuite:
    """The SciWorld benchmark: a simulator pool, the game list and the paper's splits."""

    name = "sciworld"

    def __init__(self, options: SciWorldOptions) -> None:
        self.options = options
        java = options.java_options
        if options.deterministic:
            java = f"{java} {DETERMINISTIC_JAVA_OPTIONS}".strip()
        self.pool = SimulatorPool(options.pool_size, java, options.acquire_timeout_s)
        self._games: list[Game] | None = None
        self._gold: dict[int, tuple[str, ...]] = {}  # game index -> gold actions
        self._lock = threading.Lock()

    def make(self) -> SciWorldEnv:
        return SciWorldEnv(self)

    def games(self) -> list[Game]:
        """The AgentGym game list (asks a pooled simulator for variation counts once)."""
        with self._lock:
            if self._games is None:
                self._games = game_table(self.pool.run(lambda s: s.task_variations()))
            return self._games

    def game(self, task_id: str) -> Game:
        """The game of an AgentGym ``data_idx`` (a decimal string)."""
        games = self.games()
        try:
            idx = int(str(task_id).strip())
        except ValueError:
            raise ValueError(
                f"SciWorld task ids are integers (AgentGym data_idx), got {task_id!r}"
            ) from None
        if not 0 <= idx < len(games):
            raise ValueError(f"SciWorld task id {idx} is out of range 0..{len(games) - 1}")
        return games[idx]

    def gold_actions(self, task_id: str) -> list[str]:
        """The simulator's gold action sequence for a task (a demonstration, not a limit).

        Memoised per game: generating it reloads a game on a pooled simulator (~0.1-1 s), and
        the planner-mix prior asks for it at every planner step."""
        g = self.game(task_id)
        with self._lock:
            cached = self._gold.get(g.index)
        if cached is None:
            cached = tuple(self.pool.run(
                lambda s: s.gold_actions(g.task_name, g.variation, self.options.simplification)))
            with self._lock:
                self._gold[g.index] = cached
        return list(cached)

    def task_ids(self, split: str) -> list[str]:
        if split not in ("train", "test"):
            raise ValueError(f"SciWorld has splits 'train' and 'test', not {split!r}")
        if self.options.splits_dir is None:
            return [str(i) for i in packaged_split("amc.envs.sciworld", split)]
        path = Path(self.options.splits_dir) / f"sciworld_{split}_idx.json"
        if not path.is_file():
            raise FileNotFoundError(
                f"SciWorld split file not found: {path} (fix env.options.splits_dir, or unset "
                "it for the paper's split)"
            )
        ids = json.loads(path.read_text())
        if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
            raise ValueError(f"{path}: expected a JSON list of integer game indices")
        return [str(i) for i in ids]

    def close(self) -> None:
        self.pool.close()


@ENVIRONMENTS.register("sciworld", options=SciWorldOptions)
def make_sciworld_suite(options: SciWorldOptions) -> SciWorldSuite:
    """ScienceWorld in-process (JVM pool), AgentGym task indexing, verified-replay forks."""
    return SciWorldSuite(options)
