"""TextCraft in process: craft a Minecraft item from the crafting commands listed in the task.

The initial observation lists the commands of the goal's recipe tree plus ``n_distractors``
commands for other items that use the same ingredients, shuffled, then the goal::

    Crafting commands:
    craft 4 stick using 2 planks
    ...

    Goal: craft wooden pickaxe.

Actions (as on the reference server): ``get N item`` (base items only), ``craft N item using
N a, N b`` (the ingredient counts must match one recipe exactly; a tag ingredient such as
``planks`` must be given as a concrete item such as ``oak planks``; the output count is
informational, a craft always yields the recipe's count) and ``inventory``. A failure gives a
message, reward 0, and the episode continues; the episode is done once the goal is obtained.
The parser (option ``parser``) is the reference server's, character for character, unless
``lenient`` is chosen: see :mod:`amc.envs.textcraft.actions` (and ``docs/envs-textcraft.md``
for what still differs from the reference).

Rewards (``reward``): ``binary`` pays 1 when the goal is obtained (the paper's metric);
``dense`` pays the increments of the normalised inventory value of the AMC reference server
(base items worth 1, a crafted item twice its ingredients, 1.0 in total at the goal).

Everything is deterministic given (options, task id): commands, distractors and their order come
from sorted lists and a seeded numpy generator. Registered as environment ``textcraft``.
"""

from __future__ import annotations

import zlib
from functools import lru_cache
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import Field

from amc.config import Frozen
from amc.envs.textcraft.actions import (
    ActionFailed,
    Craft,
    Get,
    Parser,
    command_recipe,
    item_id,
    menu,
    normalise,
    parse,
)
from amc.envs.textcraft.recipes import RecipeBook, pretty
from amc.envs.textcraft.sources import load_datapack, load_minecraft_data
from amc.envs.textcraft.tasks import TaskSet
from amc.registry import ENVIRONMENTS
from amc.types import EnvStep


class TextCraftOptions(Frozen):
    """Recipe source, reward, distractors and task split of TextCraft."""

    recipe_source: str = "minecraft-data"
    """'minecraft-data' (offline default, Minecraft 1.16.1) or a folder of datapack recipe
    JSON files (the benchmark's own; `amc fetch textcraft` downloads them)."""
    minecraft_version: str = "1.16.1"
    """minecraft-data version used when recipe_source == 'minecraft-data'."""
    reward: Literal["binary", "dense"] = "binary"
    """binary: 1 when the goal is obtained (paper); dense: normalised inventory-value increments
    (the AMC reference server)."""
    n_distractors: int = Field(10, ge=0)
    """Extra commands for other items sharing ingredients (reference server: 10; 0 = easier)."""
    split: Literal["default", "paper"] = "default"
    """default: split generated from the recipe book; paper: the paper's ids (shipped with
    amc) over the authors' goal list."""
    splits_dir: Path | None = None
    """Folder with textcraft_crafting_depths.csv, the authors' goal list (needed for split ==
    'paper'; `amc fetch textcraft` puts it in <dest>/splits)."""
    min_depth: int = Field(1, ge=1)
    """Keep tasks whose goal has crafting depth >= min_depth (paper evaluation: 3)."""
    max_depth: int = Field(4, ge=1)
    """Keep tasks whose goal has crafting depth <= max_depth (paper evaluation: 4)."""
    test_fraction: float = Field(0.2, gt=0, lt=1)
    """Share of each depth's tasks in the default split's test set."""
    max_plan_steps: int = Field(20, ge=1)
    """Default split: drop goals whose planned solution needs more steps than this."""
    seed: int = 0
    """Seed of the distractor commands, their order and the default split."""
    parser: Parser = "exact"
    """exact: the reference server's action parser, character for character (the paper's);
    lenient: case and extra whitespace ignored, ``get 0`` refused (inflates success rates)."""


@lru_cache(maxsize=8)
def load_book(source: str, version: str = "1.16.1") -> RecipeBook:
    """The recipe book of a source (cached: books are immutable once built)."""
    if source == "minecraft-data":
        return load_minecraft_data(version)
    return load_datapack(Path(source).expanduser())


__all__ = ["ActionFailed", "TextCraftEnv", "TextCraftOptions", "TextCraftSuite", "load_book"]


class TextCraftEnv:
    """One TextCraft episode: a goal, its command list and an inventory."""

    io_bound = False

    def __init__(self, book: RecipeBook, tasks: TaskSet, options: TextCraftOptions) -> None:
        self.book, self.tasks, self.options = book, tasks, options
        self.goal: str | None = None
        self.commands: tuple[str, ...] = ()
        self.inventory: dict[str, int] = {}  # item id -> count (insertion order is shown)
        self.done = False
        self.progress = 0.0  # normalised inventory value (dense reward potential)
        self._goal_value = 1.0
        self.closed = False

    # ----- episode -----
    def reset(self, task_id: str) -> str:
        goal = self.tasks.goal(task_id)
        self.goal, self.inventory, self.done, self.progress = goal, {}, False, 0.0
        self._goal_value = self.book.max_value(goal) or 1.0
        self.commands = self._commands(goal)
        return self.observation0

    @property
    def observation0(self) -> str:
        if self.goal is None:
            raise RuntimeError("reset() the environment first")
        return (
            "Crafting commands:\n" + "\n".join(self.commands)
            + f"\n\nGoal: craft {pretty(self.goal)}."
        )

    def _commands(self, goal: str) -> tuple[str, ...]:
        tree = list(dict.fromkeys(r.command for r in self.book.tree_recipes(goal)))
        pool: set[str] = set()
        for r in self.book.tree_recipes(goal):
            for name, _ in r.inputs:
                pool.update(u.command for u in self.book.uses.get(name, ()))
        pool.difference_update(tree)
        cands = sorted(pool)
        rng = np.random.default_rng([self.options.seed, zlib.crc32(goal.encode())])
        k = min(self.options.n_distractors, len(cands))
        picked = [cands[i] for i in sorted(rng.choice(len(cands), size=k, replace=False))]
        allc = tree + picked
        return tuple(allc[i] for i in rng.permutation(len(allc)))

    def step(self, action: str) -> EnvStep:
        if self.goal is None:
            raise RuntimeError("reset() the environment before step()")
        if self.done:
            return EnvStep("The episode is over.", 0.0, True, {"error": "episode over"})
        text = normalise(action, self.options.parser)
        try:
            obs = self._execute(text)
        except ActionFailed as err:
            return EnvStep(str(err), 0.0, False, {"error": str(err)})
        reward = 0.0
        if self.goal in self.inventory:
            self.done = True
        if self.options.reward == "binary":
            reward = 1.0 if self.done else 0.0
        elif not obs.startswith("Inventory:"):
            new = 1.0 if self.done else self.book.inventory_value(
                self.goal, self.inventory) / self._goal_value
            reward, self.progress = new - self.progress, new
        return EnvStep(obs, reward, self.done, {})

    def _execute(self, text: str) -> str:
        act = parse(text, self.options.parser)
        if isinstance(act, Craft):
            return self._craft(act)
        if isinstance(act, Get):
            return self._get(act.n, act.item)
        if not self.inventory:
            return "Inventory: You are not carrying anything."
        return "Inventory: " + " ".join(
            f"[{pretty(i)}] ({n})" for i, n in self.inventory.items()) + " "

    def _get(self, n: int, item_text: str) -> str:
        item = item_id(item_text, self.options.parser)
        # the reference server adds 0 items for `get 0` (a success); lenient refuses it
        if (n < 1 and self.options.parser == "lenient") or not self.book.is_base(item):
            raise ActionFailed(f"Could not find {item_text}")
        self.inventory[item] = self.inventory.get(item, 0) + n
        return f"Got {n} {item_text}"

    def _craft(self, act: Craft) -> str:
        p = self.options.parser
        output = item_id(act.output, p)
        inputs = [(item_id(name, p), k) for name, k in act.inputs]
        if any(self.inventory.get(i, 0) < k for i, k in inputs):
            raise ActionFailed(f"Could not find enough items to craft {output}")
        recipe = self.book.match(output, inputs)
        if recipe is None:
            raise ActionFailed(f"Could not find a valid recipe for {pretty(output)}")
        for i, k in inputs:
            self.inventory[i] -= k
            if self.inventory[i] == 0:
                del self.inventory[i]
        self.inventory[output] = self.inventory.get(output, 0) + recipe.count
        return f"Crafted {recipe.count} {output}"

    # ----- particles -----
    def fork(self) -> TextCraftEnv:
        env = TextCraftEnv(self.book, self.tasks, self.options)
        env.goal, env.commands, env._goal_value = self.goal, self.commands, self._goal_value
        env.inventory, env.done, env.progress = dict(self.inventory), self.done, self.progress
        return env

    def valid_actions(self) -> list[str] | None:
        """The gets and listed crafts that can succeed now, and ``inventory``
        (:func:`amc.envs.textcraft.actions.menu`); [] once the goal is obtained."""
        if self.goal is None:
            return None
        if self.done:
            return []
        return menu(self.tasks_recipes(), self.inventory, self.book)

    def tasks_recipes(self) -> list:
        """The recipes behind the listed commands (sorted)."""
        return listed_recipes(self.commands)

    def close(self) -> None:
        self.closed = True


@lru_cache(maxsize=4096)
def listed_recipes(commands: tuple[str, ...]) -> list:
    """The recipes behind an episode's listed crafting commands, sorted (cached per task)."""
    recipes = {r for c in commands if (r := command_recipe(c)) is not None}
    return sorted(recipes, key=lambda r: r.sort_key())


class TextCraftSuite:
    """Factory of TextCraft episodes over one recipe book and task set."""

    name = "textcraft"

    def __init__(self, options: TextCraftOptions) -> None:
        if options.min_depth > options.max_depth:
            raise ValueError(f"min_depth {options.min_depth} > max_depth {options.max_depth}")
        self.options = options
        self.book = load_book(options.recipe_source, options.minecraft_version)
        self.tasks = TaskSet(
            self.book, split=options.split, splits_dir=options.splits_dir,
            min_depth=options.min_depth, max_depth=options.max_depth,
            test_fraction=options.test_fraction, max_plan_steps=options.max_plan_steps,
            seed=options.seed,
        )

    def make(self) -> TextCraftEnv:
        return TextCraftEnv(self.book, self.tasks, self.options)

    def task_ids(self, split: str) -> list[str]:
        return self.tasks.task_ids(split)

    def close(self) -> None:
        pass


@ENVIRONMENTS.register("textcraft", options=TextCraftOptions)
def make_textcraft_suite(options: TextCraftOptions) -> TextCraftSuite:
    """TextCraft (Minecraft crafting), in process; offline by default."""
    return TextCraftSuite(options)
