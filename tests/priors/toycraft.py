"""A hand-written TextCraft-like episode for prior tests (the real TextCraft env lives in
amc.envs.textcraft.env): three recipes, get/craft/inventory commands, reward 1 for the goal."""

from __future__ import annotations

import asyncio
import copy
from collections import Counter

import numpy as np

from amc.types import INVALID_ACTION, EnvStep, History, Step

RECIPES = {  # item -> (count made, {ingredient: count})
    "oak planks": (4, {"oak log": 1}),
    "stick": (4, {"oak planks": 2}),
    "crafting table": (1, {"oak planks": 4}),
}
BASE = ("oak log", "ink sac")
GOAL = "crafting table"
OBSERVATION0 = (
    "Crafting commands:\n"
    "craft 4 oak planks using 1 oak log\n"
    "craft 4 stick using 2 oak planks\n"
    "craft 1 crafting table using 4 oak planks\n"
    "craft 1 black dye using 1 ink sac\n\n"
    f"Goal: craft {GOAL}."
)


def craft_command(item: str) -> str:
    n, ing = RECIPES[item]
    return f"craft {n} {item} using " + ", ".join(f"{k} {i}" for i, k in ing.items())


class ToyCraftEnv:
    """get N item | craft N item using ... | inventory."""

    io_bound = False

    def __init__(self) -> None:
        self.inv: Counter[str] = Counter()

    def reset(self, task_id: str) -> str:
        self.inv = Counter()
        return OBSERVATION0

    def valid_actions(self) -> list[str]:
        acts = ["inventory", *(f"get 1 {b}" for b in BASE)]
        for item, (_, ing) in RECIPES.items():
            if all(self.inv[i] >= k for i, k in ing.items()):
                acts.append(craft_command(item))
        return acts

    def step(self, action: str) -> EnvStep:
        if action == "inventory":
            inv = " ".join(f"[{k}] ({v})" for k, v in sorted(self.inv.items()) if v)
            return EnvStep(f"Inventory: {inv or 'empty'}", 0.0, False)
        if action.startswith("get 1 ") and action[6:] in BASE:
            self.inv[action[6:]] += 1
            return EnvStep(f"Got 1 {action[6:]}", 0.0, False)
        for item, (n, ing) in RECIPES.items():
            if action == craft_command(item) and all(self.inv[i] >= k for i, k in ing.items()):
                self.inv.subtract(ing)
                self.inv[item] += n
                done = item == GOAL
                return EnvStep(f"Crafted {n} minecraft:{item.replace(' ', '_')}",
                               1.0 if done else 0.0, done)
        return EnvStep(f"Could not execute {action}", 0.0, False, {"error": "invalid action"})

    def fork(self) -> ToyCraftEnv:
        return copy.deepcopy(self)

    def close(self) -> None:
        pass


async def rollout(prior, env, task_id: str, steps: int, seed: int, particle: int) -> History:
    """One particle's episode, the way the SMC driver steps it (per-(step, particle) rng)."""
    h = History(task_id, env.reset(task_id))
    for t in range(steps):
        h = h.with_valid_actions(env.valid_actions())
        rng = np.random.default_rng([seed, t, particle])
        turn = await prior.propose(h, rng)
        if turn.error:
            raise AssertionError(f"particle {particle} failed: {turn.error}")
        es = env.step(turn.action) if turn.action != INVALID_ACTION else EnvStep(
            "Invalid action.", 0.0, False)
        h = h.extend(Step(turn.raw_text, turn.action, es.observation, es.reward, es.done,
                          turn.usage))
        if es.done:
            break
    return h


async def run_particles(prior, n: int, steps: int, seed: int = 0) -> list[History]:
    """``n`` concurrent particles on one task."""
    return list(await asyncio.gather(
        *(rollout(prior, ToyCraftEnv(), "toy-1", steps, seed, i) for i in range(n))))
