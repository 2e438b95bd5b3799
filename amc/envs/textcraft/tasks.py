"""TextCraft tasks: the goal list, the default and the paper's splits, and an exact planner.

A task id is an integer (as a string) indexing the *goal list*, wrapping around as the reference
server's ``data_idx`` does; a bare item name (``stick`` or ``minecraft:stick``) is also accepted.

- **Default split** (offline): the goal list is every craftable item sorted by (depth, id).
  Items with depth in ``[min_depth, max_depth]`` whose planned solution fits in
  ``max_plan_steps`` are kept; per depth, a seeded permutation puts ``test_fraction`` of them in
  ``test`` and the rest in ``train``.
- **Paper split**: the goal list is the authors' ``textcraft_crafting_depths.csv`` (the
  reference server's idx -> goal order, fetched by ``amc fetch textcraft``), and the ids are
  the paper's, shipped in this folder's ``paper_splits.json`` (the one source of TextCraft's
  paper split, also the benchmark record's; equal to the authors' ``textcraft_*_ids.csv``),
  filtered by the file's depth (the paper used depths 3-4: 27 test and 44 train tasks).

:func:`plan` computes a short action sequence for a goal from the recipe book (min-depth
recipes, one ``get`` per base item with the total count, crafts in dependency order); it is the
oracle that tests and split filtering use.
"""

from __future__ import annotations

from collections import defaultdict
from math import ceil
from pathlib import Path

import numpy as np

from amc.envs.benchmark import packaged_split
from amc.envs.textcraft.recipes import NS, Recipe, RecipeBook, pretty, to_id

DEPTHS_FILE = "textcraft_crafting_depths.csv"


def concrete(book: RecipeBook, name: str) -> str:
    """The member a plan uses for a tag (min depth, then id); an item is itself."""
    if book.is_tag(name) and book.members(name):
        return min(book.members(name), key=lambda m: (book.depth(m), m))
    return name


def choose_recipes(book: RecipeBook, goal: str) -> tuple[dict[str, Recipe], list[str], set[str]]:
    """The plan's recipe choices for ``goal``: (crafted item -> min-depth recipe, crafted items in
    post-order (ingredients before the items that use them), base items reached).

    Tags resolve to their :func:`concrete` member; raises ``ValueError`` if an item on the way can
    be neither crafted nor fetched."""
    chosen: dict[str, Recipe] = {}
    order: list[str] = []
    base: set[str] = set()

    def visit(item: str) -> None:
        if item in chosen:
            return
        if book.is_base(item):
            base.add(item)
            return
        r = book.best_recipe(item)
        if r is None:
            raise ValueError(f"{pretty(item)} cannot be crafted or fetched")
        chosen[item] = r
        for ing, _ in r.inputs:
            visit(concrete(book, ing))
        order.append(item)

    visit(goal)
    return chosen, order, base


def plan(book: RecipeBook, goal: str) -> list[str]:
    """A short action list that crafts ``goal`` from an empty inventory.

    Demands are totalled over the recipe DAG first, so each base item is fetched once and each
    intermediate is crafted exactly ``ceil(demand / yield)`` times."""
    if book.is_base(goal):
        return [f"get 1 {pretty(goal)}"]
    chosen, order, _ = choose_recipes(book, goal)
    demand: dict[str, int] = defaultdict(int)
    demand[goal] = 1
    crafts: dict[str, int] = {}
    for item in reversed(order):  # consumers before their ingredients
        r = chosen[item]
        crafts[item] = ceil(demand[item] / r.count)
        for ing, k in r.inputs:
            demand[concrete(book, ing)] += crafts[item] * k
    actions = [f"get {demand[b]} {pretty(b)}" for b in sorted(demand) if b not in chosen]
    for item in order:
        r = chosen[item]
        ins = ", ".join(f"{k} {pretty(concrete(book, ing))}" for ing, k in r.inputs)
        actions += [f"craft {r.count} {pretty(item)} using {ins}"] * crafts[item]
    return actions


FETCH_HINT = "run `amc fetch textcraft --dest data/textcraft` (splits_dir=data/textcraft/splits)"


def read_depth_file(path: Path) -> list[tuple[str, int]]:
    """Rows of ``textcraft_crafting_depths.csv``: (item id, depth), tab-separated, in order."""
    if not path.is_file():
        raise FileNotFoundError(f"TextCraft depth file not found: {path}; {FETCH_HINT}")
    rows = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != 2 or not parts[1].strip().isdigit():
            raise ValueError(f"{path}:{n}: expected '<item id>\\t<depth>', got {line!r}")
        rows.append((parts[0].strip(), int(parts[1])))
    return rows


class TaskSet:
    """Goal list plus train/test ids for one configuration (see module docstring)."""

    def __init__(
        self,
        book: RecipeBook,
        *,
        split: str = "default",
        splits_dir: Path | None = None,
        min_depth: int = 1,
        max_depth: int = 4,
        test_fraction: float = 0.2,
        max_plan_steps: int = 20,
        seed: int = 0,
    ) -> None:
        self.book = book
        self.splits: dict[str, list[str]] = {}
        if split == "paper":
            if splits_dir is None:
                raise ValueError(
                    f"split 'paper' needs splits_dir (a folder with {DEPTHS_FILE}, the goal "
                    "list; `amc fetch textcraft` downloads it)"
                )
            d = Path(splits_dir)
            rows = read_depth_file(d / DEPTHS_FILE)
            self.goals = [g for g, _ in rows]
            depth = [dp for _, dp in rows]
            for name in ("train", "test"):
                ids = packaged_split("amc.envs.textcraft", name)
                self.splits[name] = [
                    str(i) for i in ids
                    if min_depth <= depth[i % len(rows)] <= max_depth
                    and book.is_craftable(self.goals[i % len(rows)])
                ]
        elif split == "default":
            items = book.goal_items()
            self.goals = [g for g, _ in items]
            by_depth: dict[int, list[int]] = defaultdict(list)
            for idx, (g, dp) in enumerate(items):
                if min_depth <= dp <= max_depth and len(plan(book, g)) <= max_plan_steps:
                    by_depth[dp].append(idx)
            train: list[int] = []
            test: list[int] = []
            for dp in sorted(by_depth):
                idxs = by_depth[dp]
                perm = np.random.default_rng([seed, dp]).permutation(len(idxs))
                n_test = round(test_fraction * len(idxs))
                test += [idxs[j] for j in perm[:n_test]]
                train += [idxs[j] for j in perm[n_test:]]
            self.splits = {"train": [str(i) for i in sorted(train)],
                           "test": [str(i) for i in sorted(test)]}
        else:
            raise ValueError(f"unknown TextCraft split source {split!r} (default or paper)")
        self.splits["all"] = sorted({*self.splits["train"], *self.splits["test"]}, key=int)

    def task_ids(self, split: str) -> list[str]:
        if split not in self.splits:
            raise ValueError(f"TextCraft has splits {sorted(self.splits)}, not {split!r}")
        return list(self.splits[split])

    def goal(self, task_id: str) -> str:
        """The goal item of a task id (an index into the goal list, or an item name)."""
        t = str(task_id).strip()
        if t.isdigit():
            g = self.goals[int(t) % len(self.goals)]
        else:
            g = t if t.startswith(NS) else to_id(t)
        if not self.book.is_craftable(g) and not self.book.is_base(g):
            raise ValueError(f"TextCraft task {task_id!r}: {pretty(g)!r} is not in the recipe book")
        if g not in self.book.recipes:
            raise ValueError(f"TextCraft task {task_id!r}: {pretty(g)!r} is not a craftable item")
        return g
