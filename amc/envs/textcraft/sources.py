"""The two recipe sources of TextCraft's :class:`~amc.envs.textcraft.recipes.RecipeBook`.

- :func:`load_minecraft_data`: the ``minecraft-data`` package (offline default); its
  tag-expanded variants are folded back into tags or one representative item.
- :func:`load_datapack`: vanilla datapack JSON files, with the reference server's rules.

Both drop recipes that would close a cycle, simplest recipe first then sorted order, so the
book depends on neither directory order nor hash seeds (see :mod:`amc.envs.textcraft.recipes`).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path

from amc.envs.textcraft.recipes import NS, Recipe, RecipeBook

_CRAFTING = ("minecraft:crafting_shaped", "minecraft:crafting_shapeless")


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
        raise FileNotFoundError(
            f"recipe directory not found: {d}; run `amc fetch textcraft --dest data/textcraft` "
            "(recipe_source=data/textcraft/recipes) or use recipe_source=minecraft-data"
        )
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
