"""TextCraft's recipe book: Minecraft crafting recipes as TextCraft commands, from two sources.

A :class:`RecipeBook` maps every craftable *item* (``minecraft:stick``) to its recipes; a recipe
names its ingredients by item or by *tag* (``minecraft:planks``), and a tag is satisfied by any
of its member items (``minecraft:oak_planks``...). Items that no recipe produces are *base items*:
the only ones ``get`` can fetch. Every name is a full id (``minecraft:oak_planks``); the text
the agent sees drops the namespace and underscores (``oak planks``).

Two sources build the same structure:

- :func:`load_minecraft_data` (the default, fully offline): the ``minecraft-data`` package's
  1.16.1 crafting recipes. They come with tags already expanded (one ``stick`` recipe per plank
  type), so variants of one recipe that differ in a single ingredient are folded back into a tag
  named by the members' common suffix (``planks``), or into one representative item when the
  members share no suffix or are all base items (the shortest name, then alphabetical).
- :func:`load_datapack` (the benchmark's own): the vanilla datapack JSON files that TextCraft and
  AgentGym ship, with the reference server's rules: only shaped/shapeless crafting, tags by
  recipe ``group``, a tag no craftable item belongs to becomes a base item (``oak logs``), and
  single-ingredient ``*_block`` recipes (ingots from blocks) are dropped.

Both sources drop a recipe that would close a cycle (``iron ingot`` <-> ``iron nugget``),
processing recipes in sorted order, so the book never depends on directory order or hash seeds.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from math import ceil
from pathlib import Path

NS = "minecraft:"

_CRAFTING = ("minecraft:crafting_shaped", "minecraft:crafting_shapeless")


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


# ---------------------------------------------------------------------------------------------
# Assembly shared by both sources: drop cycles (sorted order), keep used tags, sort everything.


def _reaches(graph: Mapping[str, set[str]], start: str, target: str) -> bool:
    stack, seen = [start], set()
    while stack:
        n = stack.pop()
        if n == target:
            return True
        if n in seen:
            continue
        seen.add(n)
        stack.extend(graph.get(n, ()))
    return False


def _assemble(
    raw: list[Recipe], tags: Mapping[str, Iterable[str]], items: set[str], source: str
) -> RecipeBook:
    tag_members = {t: tuple(sorted(set(m))) for t, m in tags.items()}
    graph: dict[str, set[str]] = {t: set(m) for t, m in tag_members.items()}
    kept: dict[str, list[Recipe]] = defaultdict(list)
    # Fewer ingredients first: of a cycle, the simpler recipe survives (nugget from ingot, not
    # ingot from nuggets), as in the reference server's book.
    for r in sorted(set(raw), key=lambda r: (sum(k for _, k in r.inputs), r.sort_key())):
        if any(_reaches(graph, name, r.output) for name, _ in r.inputs):
            continue  # would close a cycle
        kept[r.output].append(r)
        graph.setdefault(r.output, set()).update(name for name, _ in r.inputs)
    used = {name for rs in kept.values() for r in rs for name, _ in r.inputs}
    tag_members = {t: m for t, m in tag_members.items() if t in used}
    all_items = set(items) | set(kept) | {m for ms in tag_members.values() for m in ms}
    all_items |= {n for n in used if n not in tag_members}
    return RecipeBook(
        recipes={k: tuple(v) for k, v in sorted(kept.items())},
        tags=dict(sorted(tag_members.items())),
        items=frozenset(all_items),
        source=source,
    )


# ---------------------------------------------------------------------------------------------
# Source (b): the vanilla datapack JSON files (TextCraft / AgentGym).


def _ingredient(spec: object) -> tuple[str, bool]:
    """(name, is_tag) of one datapack ingredient (a list means alternatives: take the first)."""
    if isinstance(spec, list):
        spec = spec[0]
    if not isinstance(spec, dict):
        raise ValueError(f"bad ingredient {spec!r}")
    if "item" in spec:
        return spec["item"], False
    if "tag" in spec:
        return spec["tag"], True
    raise ValueError(f"ingredient without item or tag: {spec!r}")


def load_datapack(directory: str | Path) -> RecipeBook:
    """Read ``*.json`` recipe files (vanilla datapack format) with TextCraft's rules."""
    d = Path(directory)
    if not d.is_dir():
        raise FileNotFoundError(f"recipe directory not found: {d}")
    files = sorted(d.glob("*.json"))
    if not files:
        raise ValueError(f"no *.json recipe files in {d}")
    raw: list[Recipe] = []
    tag_refs: set[str] = set()
    items: set[str] = set()
    group_members: dict[str, set[str]] = defaultdict(set)
    for f in files:
        try:
            spec = json.loads(f.read_text())
        except json.JSONDecodeError as err:
            raise ValueError(f"{f}: not valid JSON ({err})") from None
        kind = spec.get("type")
        if kind not in _CRAFTING:
            continue
        counts: dict[str, int] = {}
        if kind == _CRAFTING[0]:
            pattern = spec["pattern"]
            for key, ing in spec["key"].items():
                name, is_tag = _ingredient(ing)
                counts[name] = counts.get(name, 0) + sum(line.count(key) for line in pattern)
                (tag_refs if is_tag else items).add(name)
        else:
            for ing in spec["ingredients"]:
                name, is_tag = _ingredient(ing)
                counts[name] = counts.get(name, 0) + 1
                (tag_refs if is_tag else items).add(name)
        res = spec["result"]
        out, n = (res, 1) if isinstance(res, str) else (res["item"], int(res.get("count") or 1))
        items.add(out)
        if len(counts) == 1 and next(iter(counts)).endswith("_block"):
            continue  # e.g. 9 iron ingots from an iron block: the reference drops these
        group = spec.get("group")
        if group and NS + group != out:
            group_members[NS + group].add(out)
        raw.append(Recipe(out, n, tuple(counts.items())))
    tags: dict[str, set[str]] = {}
    crafted = {r.output for r in raw}
    for t in sorted(tag_refs):
        members = group_members.get(t, set())
        if members & crafted:
            tags[t] = members
        else:
            items.add(t)  # a tag nothing craftable belongs to acts as a base item ("oak logs")
    return _assemble(raw, tags, items, source=str(d))


# ---------------------------------------------------------------------------------------------
# Source (a): the minecraft-data package (offline default).


def _common_suffix(names: list[str]) -> str:
    parts = [n.removeprefix(NS).split("_") for n in names]
    out: list[str] = []
    for toks in zip(*(reversed(p) for p in parts), strict=False):
        if len(set(toks)) != 1:
            break
        out.insert(0, toks[0])
    return "_".join(out)


def load_minecraft_data(version: str = "1.16.1") -> RecipeBook:
    """Crafting recipes of ``minecraft-data`` (tag-expanded variants folded, see module doc)."""
    try:
        import minecraft_data
    except ModuleNotFoundError:
        raise ValueError(
            "recipe_source 'minecraft-data' needs the package: pip install minecraft-data==3.20.0"
        ) from None
    md = minecraft_data(version)
    name_of = {it["id"]: NS + it["name"] for it in md.items_list}
    variants: dict[tuple[str, int], set[tuple[tuple[str, int], ...]]] = defaultdict(set)
    items: set[str] = set()
    for rid in sorted(md.recipes, key=int):
        for spec in md.recipes[rid]:
            cells = (
                [c for row in spec["inShape"] for c in row]
                if "inShape" in spec
                else list(spec.get("ingredients", []))
            )
            counts: dict[str, int] = {}
            for c in cells:
                if c is not None:
                    counts[name_of[c]] = counts.get(name_of[c], 0) + 1
            if not counts:
                continue
            out = name_of[spec["result"]["id"]]
            items.update(counts)
            items.add(out)
            if len(counts) == 1 and next(iter(counts)).endswith("_block"):
                continue
            variants[(out, int(spec["result"]["count"]))].add(tuple(sorted(counts.items())))
    crafted = {out for out, _ in variants}
    raw: list[Recipe] = []
    tags: dict[str, set[str]] = {}
    # member set -> tag name (or representative item); the same set always folds the same way
    folded: dict[frozenset[str], str] = {}

    def fold(members: frozenset[str]) -> str:
        if members in folded:
            return folded[members]
        ms = sorted(members)
        suffix = _common_suffix(ms)
        name = NS + suffix if suffix else ""
        ok = bool(suffix) and bool(members & crafted) and name not in items
        ok = ok and (name not in tags or tags[name] == set(members))
        if ok:
            tags[name] = set(members)
        else:
            name = min(ms, key=lambda m: (len(m), m))
        folded[members] = name
        return name

    for (out, n), vs in sorted(variants.items()):
        todo = sorted(vs)
        while todo:
            # group the remaining variants that differ from todo[0] in exactly one ingredient
            first = todo[0]
            best: list[tuple[tuple[str, int], ...]] = [first]
            slot = None
            for i, (_, k) in enumerate(first):
                rest = first[:i] + first[i + 1 :]
                grp = [
                    v for v in todo
                    if len(v) == len(first)
                    and any(v[:j] + v[j + 1 :] == rest and v[j][1] == k for j in range(len(v)))
                ]
                if len(grp) > len(best):
                    best, slot = grp, (i, rest, k)
            if slot is None:
                raw.append(Recipe(out, n, first))
                todo.remove(first)
                continue
            i, rest, k = slot
            members = frozenset(
                next(v[j][0] for j in range(len(v)) if v[:j] + v[j + 1 :] == rest) for v in best
            )
            ing = fold(members)
            inputs = list(rest)
            inputs.insert(i, (ing, k))
            raw.append(Recipe(out, n, tuple(inputs)))
            todo = [v for v in todo if v not in best]
    return _assemble(raw, tags, items, source=f"minecraft-data {version}")
