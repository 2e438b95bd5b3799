"""TextCraft's action grammar and its menu of valid actions, shared by every TextCraft client.

**Grammar.** Two parsers read an action string:

- ``exact`` (default, the benchmark's): the reference AgentGym TextCraft server's rules. The
  action is matched from its first character, case-sensitively, without stripping it, against
  ``craft (.*) using (.*)``, ``get ([0-9]+) (.*)`` and ``inventory``; an item name becomes
  ``minecraft:`` + the name with each space replaced by ``_``. So ``Get 1 oak log``, ``get 1  oak
  log`` (two spaces) and ``get 1 oak log `` (a trailing space) all fail, and ``get 0 oak log``
  succeeds (it adds nothing). Ingredients of a craft are split at commas and each is stripped
  before ``N item`` is read from it.
- ``lenient``: case-insensitive, surrounding and repeated whitespace ignored, ``get 0`` refused.
  Kinder to small models, but it inflates success rates against the paper: never in paper runs.

**Menu.** :func:`menu` lists the actions that can succeed now: a ``get`` for each base
ingredient of the listed commands (at each count they use), each listed craft the inventory can
pay for (a tag filled by the held member with most items, then by id), and ``inventory``. It
needs only the listed commands, the inventory and a recipe book (to tell base items and tags'
members apart), so the in-process environment and the AgentGym client -- which sees only a
reference server's text -- build it with the same code: the client parses the commands from the
first observation (:func:`listed_commands`) and the inventory from the recorded steps
(:func:`inventory_after`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from amc.envs.textcraft.recipes import NS, Recipe, RecipeBook, pretty, to_id

Parser = Literal["exact", "lenient"]

_EXACT = {
    "craft": re.compile(r"craft (.*) using (.*)"),
    "get": re.compile(r"get ([0-9]+) (.*)"),
    "inventory": re.compile(r"inventory"),
}
_LENIENT = {k: re.compile(v.pattern, re.I) for k, v in _EXACT.items()}
_COUNT = re.compile(r"([0-9]+) (.*)")
_CRAFTED = re.compile(r"Crafted ([0-9]+) (\S+)$")


class ActionFailed(Exception):
    """An action that cannot be executed; its message is the observation."""


@dataclass(frozen=True)
class Get:
    """``get N item``: ``item`` as written (the success text repeats it)."""

    n: int
    item: str


@dataclass(frozen=True)
class Craft:
    """``craft [N] item using N a, N b``: item and ingredient names as written."""

    count: int | None
    output: str
    inputs: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class Inventory:
    """``inventory``."""


def normalise(action: str, parser: Parser) -> str:
    """The text the parser reads: the action itself (exact), or stripped and collapsed."""
    return action if parser == "exact" else " ".join(action.strip().split())


def item_id(text: str, parser: Parser) -> str:
    """The item id an item name stands for (``oak planks`` -> ``minecraft:oak_planks``)."""
    return NS + text.replace(" ", "_") if parser == "exact" else to_id(text)


def parse(text: str, parser: Parser) -> Get | Craft | Inventory:
    """Read one (normalised) action; an action of no known form raises :class:`ActionFailed`."""
    rx = _EXACT if parser == "exact" else _LENIENT
    if m := rx["craft"].match(text):
        out = m.group(1) if parser == "exact" else m.group(1).strip()
        cm = _COUNT.match(out)
        inputs = []
        for part in m.group(2).split(","):
            pm = _COUNT.match(part.strip())
            if not pm:
                raise ActionFailed(f"Wrong item format: {part.strip()}")
            inputs.append((pm.group(2), int(pm.group(1))))
        return Craft(int(cm.group(1)) if cm else None, cm.group(2) if cm else out, tuple(inputs))
    if m := rx["get"].match(text):
        return Get(int(m.group(1)), m.group(2))
    if rx["inventory"].match(text):
        return Inventory()
    raise ActionFailed(f"Could not execute {text}")


def command_recipe(command: str) -> Recipe | None:
    """The recipe a listed command states (``craft 4 stick using 2 planks``), or None."""
    try:
        act = parse(command, "exact")
    except ActionFailed:
        return None
    if not isinstance(act, Craft) or act.count is None:
        return None
    ins = tuple((item_id(name, "exact"), k) for name, k in act.inputs)
    return Recipe(item_id(act.output, "exact"), act.count, ins)


def listed_commands(observation0: str) -> list[str]:
    """The crafting commands a TextCraft task lists (its first observation), in order."""
    _, sep, rest = observation0.partition("Crafting commands:\n")
    if not sep:
        return []
    return [c for c in rest.split("\n\n", 1)[0].splitlines() if c.startswith("craft ")]


def inventory_after(steps: Iterable[tuple[str, str]]) -> dict[str, int]:
    """The inventory of an episode from its (action, observation) steps, as the reference
    server keeps it: a ``Got`` adds, a ``Crafted`` consumes the ingredients and adds the
    output the message names; every other observation changes nothing."""
    inv: dict[str, int] = {}
    for action, obs in steps:
        act = _try_parse(action)
        if obs.startswith("Got ") and isinstance(act, Get):
            key = item_id(act.item, "exact")
            inv[key] = inv.get(key, 0) + act.n
        elif (cm := _CRAFTED.match(obs)) and isinstance(act, Craft):
            for name, k in act.inputs:
                key = item_id(name, "exact")
                inv[key] = inv.get(key, 0) - k
                if inv[key] <= 0:
                    del inv[key]
            inv[cm.group(2)] = inv.get(cm.group(2), 0) + int(cm.group(1))
    return inv


def _try_parse(action: str) -> Get | Craft | Inventory | None:
    try:
        return parse(action, "exact")
    except ActionFailed:
        return None


def menu(recipes: Sequence[Recipe], inventory: Mapping[str, int], book: RecipeBook) -> list[str]:
    """The actions that can succeed now (see the module docstring); sorted within each kind."""
    gets: set[tuple[str, int]] = set()
    crafts: set[str] = set()
    for r in recipes:
        gets.update((name, k) for name, k in r.inputs if book.is_base(name))
        ins = []
        for name, k in r.inputs:
            held = [i for i in (name, *book.members(name)) if inventory.get(i, 0) >= k]
            if not held:
                break
            ins.append(f"{k} {pretty(min(held, key=lambda i: (-inventory[i], i)))}")
        else:
            crafts.add(f"craft {r.count} {pretty(r.output)} using {', '.join(ins)}")
    return [*(f"get {k} {pretty(n)}" for n, k in sorted(gets)), *sorted(crafts), "inventory"]


def observed_menu(observation0: str, steps: Sequence[tuple[str, str]], done: bool,
                  book: Callable[[], RecipeBook]) -> list[str] | None:
    """:func:`menu` from what a client saw: the commands its first observation lists and the
    inventory its (action, observation) steps built; [] once done, None if no command is
    listed (then nothing can be derived). ``book`` is called only when it is needed."""
    recipes = {r for c in listed_commands(observation0) if (r := command_recipe(c)) is not None}
    if not recipes:
        return None
    if done:
        return []
    return menu(sorted(recipes, key=lambda r: r.sort_key()), inventory_after(steps), book())
