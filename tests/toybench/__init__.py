"""A toy benchmark in one folder: its environment, suite and :class:`Benchmark` record.

The counter game: the quest is to reach a target count with ``up`` (``down`` undoes a step);
reaching it earns 1 and ends the episode. Nothing outside this folder names it: importing the
package registers its suite factory (environment ``toy-counter``) and its record, which the
priors (prompts, parser, planner), the value model (instruction extraction, reward range) and
the pipeline (prompt hash) then find by name -- the check that adding a benchmark needs no edit
elsewhere (``tests/envs/test_toy_benchmark.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from amc.envs.benchmark import Benchmark, PlannerHooks, PromptSet
from amc.envs.benchmarks import register_benchmark
from amc.registry import ENVIRONMENTS
from amc.types import EnvStep

NAME = "toy-counter"


@dataclass
class CounterEnv:
    """One episode of the counter game."""

    target: int = 0
    count: int = 0
    done: bool = False
    io_bound = False

    def reset(self, task_id: str) -> str:
        self.target, self.count, self.done = 2 + int(task_id) % 2, 0, False
        return f"Counter game.\nQuest: reach {self.target}.\nYou hold 0."

    def step(self, action: str) -> EnvStep:
        if self.done:
            return EnvStep("The game is over.", 0.0, True)
        self.count += {"up": 1, "down": -1}.get(action, 0)
        self.done = self.count == self.target
        return EnvStep(f"You hold {self.count}.", 1.0 if self.done else 0.0, self.done)

    def fork(self) -> CounterEnv:
        return CounterEnv(self.target, self.count, self.done)

    def valid_actions(self) -> list[str] | None:
        return [] if self.done else ["up", "down"]

    def close(self) -> None:
        pass


class CounterSuite:
    """Test tasks 0..5, train tasks 100..109."""

    name = NAME

    def make(self) -> CounterEnv:
        return CounterEnv()

    def task_ids(self, split: str) -> list[str]:
        return [str(i) for i in (range(6) if split == "test" else range(100, 110))]

    def close(self) -> None:
        pass


@ENVIRONMENTS.register(NAME)
def make_counter_suite() -> CounterSuite:
    """The toy counter game (tests only)."""
    return CounterSuite()


def _next_action(env: CounterEnv) -> str | None:
    return None if env.done else "up"


PROMPTS = PromptSet(
    "Count up to the quest's number. Thought: ... then Action: up or Action: down.",
    "Observation: Quest: reach 1.\nAction: up\nObservation: You hold 1.")

BENCHMARK = register_benchmark(Benchmark(
    NAME, PROMPTS,
    normalise=lambda a: a.strip().lower().rstrip("!."),
    extract_instruction=lambda obs: obs.split("Quest:", 1)[1].split("\n", 1)[0].strip(),
    clean_state=lambda obs, instruction: obs.replace(f"Quest: {instruction}", "").strip(),
    reward_range=(0.0, 2.0),
    planner=lambda: PlannerHooks(_next_action)))
