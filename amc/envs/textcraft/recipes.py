"""TextCraft's recipe book: Minecraft crafting recipes as TextCraft commands, from two sources.

A :class:`RecipeBook` maps every craftable *item* (``minecraft:stick``) to its recipes; a recipe
names its ingredients by item or by *tag* (``minecraft:planks``), and a tag is satisfied by any
of its member items (``minecraft:oak_planks``...). Items that no recipe produces are *base items*:
the only ones ``get`` can fetch. Every name is a full id (``minecraft:oak_planks``); the text
the agent sees drops the namespace and underscores (``oak planks``).

Two sources (:mod:`amc.envs.textcraft.sources`) build the same structure:

- ``load_minecraft_data`` (the default, fully offline): the ``minecraft-data`` package's
  1.16.1 crafting recipes. They come with tags already expanded (one ``stick`` recipe per plank
  type), so variants of one recipe that differ in a single ingredient are folded back into a tag
  named by the members' common suffix (``planks``), or into one representative item when the
  members share no suffix or are all base items (the shortest name, then alphabetical).
- ``load_datapack`` (the benchmark's own): the vanilla datapack JSON files that TextCraft and
  AgentGym ship, with the reference server's rules: only shaped/shapeless crafting, tags by
  recipe ``group``, a tag no craftable item belongs to becomes a base item (``oak logs``), and
  single-ingredient ``*_block`` recipes (ingots from blocks) are dropped.

Both sources drop a recipe that would close a cycle (``iron ingot`` <-> ``iron nugget``),
processing recipes in sorted order, so the book never depends on directory order or hash seeds.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from math import ceil

NS = "minecraft:"

def pretty(name: str) -> str:
    """``minecraft:oak_planks`` -> ``oak planks`` (the names the agent reads and writes)."""
    return name.removeprefix(NS).replace("_", " ")


def to_id(text: str) -> str:
    """``oak planks`` -> ``minecraft:oak_planks`` (inverse of :func:`pretty`)."""
    return NS + "_".join(text.strip().lower().split())


@dataclass(frozen=True)
class Recipe:
    """``count`` of ``output`` from ``inputs`` ((item-or-tag id, count) pairs, in source order)."""

    output: str
    count: int
    inputs: tuple[tuple[str, int], ...]

    @property
    def command(self) -> str:
        """The TextCraft command, e.g. ``craft 4 stick using 2 planks``."""
        ins = ", ".join(f"{n} {pretty(name)}" for name, n in self.inputs)
        return f"craft {self.count} {pretty(self.output)} using {ins}"

    def sort_key(self) -> tuple:
        return (self.output, self.count, self.inputs)


@dataclass(eq=False)  # identity hash: books are cached and used as cache keys
class RecipeBook:
    """Recipes by item, tags and their members, plus derived depths and values."""

    recipes: dict[str, tuple[Recipe, ...]]
    """Craftable item id -> its recipes (sorted)."""
    tags: dict[str, tuple[str, ...]]
    """Tag id -> member item ids (sorted); only tags some recipe uses as an ingredient."""
    items: frozenset[str]
    """Every item id that appears anywhere (what ``get`` may name when it is not craftable)."""
    source: str = ""
    """Where the book came from (for messages)."""
    _depth: dict[str, int] = field(default_factory=dict, repr=False)

    # ----- structure -----
    def is_tag(self, name: str) -> bool:
        return name in self.tags

    def is_craftable(self, name: str) -> bool:
        return name in self.recipes or (name in self.tags and bool(self.tag_recipes(name)))

    def is_base(self, name: str) -> bool:
        """Whether ``get`` can fetch ``name``: a known item that no recipe produces."""
        return name in self.items and name not in self.tags and name not in self.recipes

    def members(self, tag: str) -> tuple[str, ...]:
        return self.tags.get(tag, ())

    def satisfies(self, item: str, ingredient: str) -> bool:
        """Whether a concrete ``item`` fills the ingredient slot ``ingredient`` (item or tag)."""
        return item == ingredient or item in self.tags.get(ingredient, ())

    def tag_recipes(self, tag: str) -> tuple[Recipe, ...]:
        return tuple(r for m in self.members(tag) for r in self.recipes.get(m, ()))

    def recipes_for(self, name: str) -> tuple[Recipe, ...]:
        """Recipes producing an item, or any member of a tag."""
        return self.recipes.get(name) or self.tag_recipes(name)

    @cached_property
    def uses(self) -> dict[str, tuple[Recipe, ...]]:
        """Ingredient name -> recipes that use it (for distractor commands)."""
        out: dict[str, list[Recipe]] = defaultdict(list)
        for item in sorted(self.recipes):
            for r in self.recipes[item]:
                for name, _ in r.inputs:
                    out[name].append(r)
        return {k: tuple(v) for k, v in out.items()}

    # ----- depth -----
    def depth(self, name: str) -> int:
        """Minimum crafting depth: 0 for base items, else min over recipes of max input + 1."""
        if name not in self._depth:
            recipes = self.recipes_for(name)
            self._depth[name] = (
                min(self.recipe_depth(r) for r in recipes) if recipes else 0
            )
        return self._depth[name]

    def recipe_depth(self, r: Recipe) -> int:
        return max(self.depth(name) + 1 for name, _ in r.inputs)

    def best_recipe(self, name: str) -> Recipe | None:
        """The first (sorted) recipe of minimum depth for an item or tag."""
        recipes = self.recipes_for(name)
        return min(recipes, key=lambda r: (self.recipe_depth(r), r.sort_key())) if recipes else None

    def goal_items(self) -> list[tuple[str, int]]:
        """Every craftable item with its depth, sorted by (depth, id)."""
        return sorted(((i, self.depth(i)) for i in self.recipes), key=lambda x: (x[1], x[0]))

    # ----- commands shown for a goal -----
    def tree_recipes(self, goal: str) -> list[Recipe]:
        """All recipes in the goal's recipe tree (every alternative, recursively), no repeats."""
        seen: dict[Recipe, None] = {}

        def visit(name: str, path: frozenset[str]) -> None:
            if name in path:
                return
            rs = self.recipes_for(name)
            for r in rs:
                seen.setdefault(r, None)
            for r in rs:
                for ing, _ in r.inputs:
                    visit(ing, path | {name})

        visit(goal, frozenset())
        return list(seen)

    # ----- dense reward (the AMC reference server's inventory value) -----
    def max_value(self, name: str, count: int = 1) -> float:
        """Value of ``count`` of ``name`` made from scratch: base = 1 each, crafted = 2 x inputs.

        Follows each item's min-depth recipe and reuses leftovers (a craft of 4 sticks feeds
        later needs), like the reference ``get_max_reward``."""
        surplus: dict[str, int] = {}

        def score(n: str, need: int) -> float:
            take = min(need, surplus.get(n, 0))
            surplus[n] = surplus.get(n, 0) - take
            need -= take
            if need <= 0:
                return 0.0
            if self.is_tag(n) and self.members(n):
                n = min(self.members(n), key=lambda m: (self.depth(m), m))
            r = self.best_recipe(n)
            if r is None:
                return float(need)
            crafts = ceil(need / r.count)
            surplus[n] = surplus.get(n, 0) + crafts * r.count - need
            return 2.0 * sum(score(ing, crafts * k) for ing, k in r.inputs)

        return score(name, count)

    def inventory_value(self, goal: str, inventory: Mapping[str, int]) -> float:
        """Unnormalised progress towards one ``goal``: held items count at their full value,
        missing ones recurse into their min-depth recipes (best branch wins)."""
        unit: dict[str, float] = {}

        def val(n: str) -> float:
            if n not in unit:
                unit[n] = self.max_value(n)
            return unit[n]

        def score(n: str, need: int, inv: dict[str, int]) -> tuple[float, dict[str, int]]:
            inv = dict(inv)
            got = 0.0
            for cand in (n, *self.members(n)):
                take = min(inv.get(cand, 0), need)
                if take:
                    got += take * val(cand)
                    inv[cand] -= take
                    need -= take
            if need <= 0:
                return got, inv
            recipes = self.recipes_for(n)
            if not recipes:
                return got, inv
            d = min(self.recipe_depth(r) for r in recipes)
            best, best_inv = 0.0, inv
            for r in sorted(recipes, key=Recipe.sort_key):
                if self.recipe_depth(r) != d:
                    continue
                s, b_inv = 0.0, inv
                for ing, k in r.inputs:
                    si, b_inv = score(ing, ceil(need / r.count) * k, b_inv)
                    s += si
                if s > best:
                    best, best_inv = s, b_inv
            return got + best, best_inv

        return score(goal, 1, dict(inventory))[0]

    # ----- crafting -----
    def match(self, output: str, inputs: Iterable[tuple[str, int]]) -> Recipe | None:
        """The recipe of ``output`` whose ingredients the given concrete items fill exactly.

        Each ingredient must be matched by one given (item, count) with the same count, and no
        given item may be left over (the reference server's exact-count rule)."""
        given = list(inputs)
        for r in self.recipes.get(output, ()):
            left = list(given)
            ok = True
            for ing, k in r.inputs:
                hit = next((g for g in left if self.satisfies(g[0], ing)), None)
                if hit is None or hit[1] != k:
                    ok = False
                    break
                left.remove(hit)
            if ok and not left:
                return r
        return None
