"""WebShop as an in-process text environment over a product catalog (environment ``webshop``).

The benchmark (Yao et al., 2022) is a simulated shop: the agent reads an instruction ("Find me
... with color: black, and price lower than 40.00 dollars"), searches, browses results and item
pages, chooses options and clicks *Buy Now*; the purchase is scored against the hidden goal
(:mod:`amc.envs.webshop.reward`). This module re-implements the benchmark's text mode
(``WebAgentTextEnv``, ``observation_mode="text"``) without its Flask/Lucene/Java stack:

- pages: search -> results (10 per page of the top 50, ``Next >``/``< Prev``) -> item page
  (options, ``Description``/``Features``/``Reviews`` sub-pages, ``Buy Now``) -> done page;
- observations: the page's visible texts joined by `` [SEP] `` (the benchmark's "simple"
  text), with the instruction on every page, e.g.
  ``WebShop [SEP] Instruction: [SEP] <instruction> [SEP] Search``;
- actions: ``search[keywords]`` (from any page, as upstream) or ``click[value]`` with ``value``
  one of the page's clickables, lower-cased. Anything else leaves the state unchanged, returns
  the unchanged page with reward 0 (``info["error"]`` says why) and still uses up a step;
- reward only on ``click[buy now]`` (``done`` then True).

**Step budget and forced buy (the paper's setting).** An episode allows ``max_steps`` (10)
agent actions. With ``forced_buy`` (default) every method then takes one extra, identical
action: the driver asks :meth:`WebShopEnv.final_action` (``"click[buy now]"`` while the
episode is running, else ``None``) and steps it without an agent turn. On an item page this
buys the item and is scored; elsewhere it is an invalid click worth 0. The env ends the
episode (``done``, ``info["truncated"]``) on the step that exhausts ``max_steps`` (+1 with the
forced buy), so a driver with a larger budget cannot exceed the benchmark's.

Environments hold only their session (page, query, item, chosen options, step count); the
catalog, goals and BM25 index are one shared :class:`~amc.envs.webshop.catalog.Catalog` per
setting, so ``fork()`` copies a few fields.

Task ids index the goal list shuffled with the server's seed; the default splits are the
paper's: test = ids 5..54, train = 0..1500 without them (ids beyond the catalog's goals are
dropped).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pydantic import Field

from amc.config import Frozen
from amc.envs.benchmark import packaged_split
from amc.envs.webshop.catalog import Catalog, load_catalog
from amc.envs.webshop.reward import get_reward, noun_extractor
from amc.protocols import ForcesFinalAction
from amc.registry import ENVIRONMENTS
from amc.types import EnvStep

PRODUCT_WINDOW = 10
"""Results per page."""
BUY = "buy now"
FORCED_BUY_ACTION = "click[buy now]"
SUB_PAGES = {"description": "Description", "features": "Features", "reviews": "Reviews"}
TEST_IDS = tuple(packaged_split("amc.envs.webshop", "test"))  # the paper's split (5..54)
TRAIN_IDS = tuple(packaged_split("amc.envs.webshop", "train"))  # 0..1500 without the test ids

_ACTION = re.compile(r"(.+)\[(.+)\]")  # the benchmark's parse: name[arg]


class WebShopOptions(Frozen):
    """Settings of the in-process WebShop (defaults: the paper's AgentGym setting)."""

    data_dir: str = "data/webshop"
    """Catalog directory (items_shuffle_1000.json, items_ins_v2_1000.json[, items_human_ins])."""
    num_products: int | None = Field(1000, ge=1)
    """Use the first N products of the product file (None: all)."""
    goals: Literal["synthetic", "human"] = "synthetic"
    """Goal source: synthetic instructions (paper) or human-written ones (needs items_human_ins)."""
    max_steps: int = Field(10, ge=1)
    """Agent actions per episode (the paper: 10)."""
    forced_buy: bool = True
    """Whether one forced click[buy now] follows the agent's steps (final_action())."""
    seed: int = 233
    """Seed of the goal price bounds, range prices and goal shuffle (the server's: 233)."""
    split_ids: dict[str, list[int]] | None = None
    """Task ids per split, overriding the paper's test 5..54 / train 0..1500 split."""
    noun_tagger: str = "heuristic"
    """Title-noun tagger of the type reward: heuristic, or spacy:<model> if spaCy is installed."""


def parse_action(action: str) -> tuple[str, str | None]:
    """``"click[Buy Now]"`` -> ``("click", "Buy Now")``; no brackets -> ``(action, None)``."""
    m = _ACTION.match(action)
    return (action, None) if m is None else (m.group(1), m.group(2))


def normalize_webshop_action(text: str) -> str:
    """Tidy a model's action text into the benchmark's syntax (for action parsers).

    Keeps the first non-empty line, drops wrapping quotes/backticks and a trailing period,
    lower-cases the verb and removes spaces around it and inside the brackets:
    ``' Click [ Buy Now ].'`` -> ``'click[Buy Now]'``. The argument's case is kept (the env
    lower-cases it). Text that is not ``search[...]``/``click[...]`` is returned stripped.
    """
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    s = lines[0] if lines else ""
    s = s.strip("`'\" ").rstrip(".").strip("`'\" ")
    m = re.fullmatch(r"(?i)(search|click)\s*\[\s*(.*?)\s*\]", s)
    return f"{m.group(1).lower()}[{m.group(2)}]" if m else s


@dataclass
class _Session:
    """One episode's mutable state (copied on fork; the goal and catalog are shared)."""

    goal: dict[str, Any]
    page: Literal["search", "results", "item", "sub", "done"] = "search"
    keywords: str | None = None
    page_num: int = 1
    asin: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    sub: str | None = None
    t: int = 0
    done: bool = False
    reward: float = 0.0


class WebShopEnv(ForcesFinalAction):
    """One WebShop episode (see the module docstring for pages, actions and the forced buy)."""

    io_bound = False

    def __init__(
        self, catalog: Catalog, options: WebShopOptions, nouns: Callable[[str], list[str]]
    ) -> None:
        self.catalog, self.options, self._nouns = catalog, options, nouns
        self._s: _Session | None = None
        self.closed = False

    # -- protocol -------------------------------------------------------------------------
    def reset(self, task_id: str) -> str:
        n = len(self.catalog.goals)
        try:
            idx = int(task_id)
        except ValueError:
            raise ValueError(f"webshop task ids are goal indices, got {task_id!r}") from None
        if not 0 <= idx < n:
            raise ValueError(f"webshop task id {idx} out of range: the catalog has {n} goals")
        self._s = _Session(goal=self.catalog.goals[idx])
        return self.observation()

    def step(self, action: str) -> EnvStep:
        s = self._session()
        if s.done:
            return EnvStep(self.observation(), 0.0, True, {"error": "the episode is over"})
        s.t += 1
        reward, info = self._act(action)
        budget = self.options.max_steps + (1 if self.options.forced_buy else 0)
        if not s.done and s.t >= budget:
            s.done = True
            info["truncated"] = True
        return EnvStep(self.observation(), reward, s.done, info)

    def fork(self) -> WebShopEnv:
        env = WebShopEnv(self.catalog, self.options, self._nouns)
        if self._s is not None:
            env._s = replace(self._s, options=dict(self._s.options))
        return env

    def valid_actions(self) -> list[str] | None:
        s = self._session()
        if s.done:
            return []
        acts = ["search[<keywords>]"] if s.page == "search" else []
        return acts + [f"click[{c}]" for c in self.clickables() if c != "search"]

    def close(self) -> None:
        self.closed = True

    # -- WebShop specifics ----------------------------------------------------------------
    def final_action(self) -> str | None:
        """The forced last action (``"click[buy now]"``), or None if off or the episode ended."""
        if not self.options.forced_buy or self._s is None or self._s.done:
            return None
        return FORCED_BUY_ACTION

    def available_actions(self) -> dict[str, Any]:
        """``{"has_search_bar", "clickables"}`` as the AgentGym server's /available_actions."""
        s = self._session()
        if s.done:
            return {"has_search_bar": False, "clickables": []}
        return {"has_search_bar": s.page == "search", "clickables": list(self.clickables())}

    @property
    def instruction(self) -> str:
        """The goal's instruction text."""
        return self._session().goal["instruction_text"]

    @property
    def goal(self) -> dict[str, Any]:
        """The hidden goal (asin, attributes, goal_options, price_upper, ...)."""
        return self._session().goal

    def clickables(self) -> dict[str, tuple[str, str]]:
        """Lower-cased clickable text -> (kind, target) on the current page, in page order."""
        s = self._session()
        out: dict[str, tuple[str, str]] = {}
        if s.page == "search":
            out["search"] = ("button", "search")
        elif s.page in ("results", "item", "sub"):
            out["back to search"] = ("button", "back")
            if s.page == "results":
                if s.page_num > 1:
                    out["< prev"] = ("button", "prev")
                out["next >"] = ("button", "next")
                for asin in self._page_results():
                    out[asin.lower()] = ("product", asin)
            else:
                out["< prev"] = ("button", "prev")
            if s.page == "item":
                for sub in SUB_PAGES:
                    out[sub] = ("button", sub)
                out[BUY] = ("button", BUY)
                for name, values in self._product()["options"].items():
                    for v in values:
                        out[v] = ("option", name)  # a value in two groups: the last wins
        return out

    def observation(self) -> str:
        """The current page as WebShop's simple text (fields joined by `` [SEP] ``)."""
        s = self._session()
        instr = s.goal["instruction_text"]
        if s.page == "search":
            parts = ["WebShop", "Instruction:", instr, "Search"]
        elif s.page == "done":
            parts = [
                "Thank you for shopping with us!", "Your code:", "None",
                "(Paste it in your MTurk interface.)", "Purchased", "asin", s.asin or "",
                "options", json.dumps(s.options), "Your score (min 0.0, max 1.0)",
                str(s.reward),
            ]
        else:
            parts = ["Instruction:", instr, "Back to Search"]
            p = self._product() if s.asin else None
            if s.page == "results":
                total = len(self._results())
                parts.append(f"Page {s.page_num} (Total results: {total})")
                parts += (["< Prev"] if s.page_num > 1 else []) + ["Next >"]
                for asin in self._page_results():
                    q = self.catalog.by_asin[asin]
                    parts += [asin, q["Title"], q["Price"]]
            elif s.page == "item" and p is not None:
                parts.append("< Prev")
                for name, values in p["options"].items():
                    parts += [name, *values]
                parts += [p["Title"], f"Price: {p['Price']}", f"Rating: {p['Rating']}"]
                parts += [*SUB_PAGES.values(), "Buy Now"]
            elif s.page == "sub" and p is not None:
                parts.append("< Prev")
                if s.sub == "description":
                    parts.append(p["Description"])
                elif s.sub == "features":
                    parts += list(p["BulletPoints"])
                else:
                    for r in p["Reviews"]:
                        parts += [f'"{r.get("title", "")}"', r.get("score", ""), r.get("body", "")]
        return " [SEP] ".join(t for t in (str(x).strip() for x in parts) if t)

    # -- internals ------------------------------------------------------------------------
    def _session(self) -> _Session:
        if self._s is None:
            raise RuntimeError("reset() the webshop environment before using it")
        return self._s

    def _product(self) -> dict[str, Any]:
        return self.catalog.by_asin[self._session().asin or ""]

    def _results(self) -> tuple[str, ...]:
        kw = self._session().keywords
        return self.catalog.search(kw) if kw else ()

    def _page_results(self) -> tuple[str, ...]:
        n = self._session().page_num
        return self._results()[(n - 1) * PRODUCT_WINDOW : n * PRODUCT_WINDOW]

    def _to_results(self, s: _Session, keywords: str, page_num: int) -> None:
        s.page, s.keywords, s.page_num, s.asin, s.options, s.sub = (
            "results", keywords, page_num, None, {}, None,
        )

    def _act(self, action: str) -> tuple[float, dict[str, Any]]:
        """Apply one action to the session; returns (reward, info)."""
        s = self._session()
        name, arg = parse_action(action)
        arg = arg.lower() if arg is not None else None
        if name == "search" and arg:
            self._to_results(s, arg, 1)
            return 0.0, {}
        clicks = self.clickables()
        if name != "click" or arg is None or arg not in clicks or arg == "search":
            why = "no such clickable here" if name == "click" else "not search[...] or click[...]"
            return 0.0, {"error": f"invalid action: {why}"}
        kind, target = clicks[arg]
        if arg == BUY:
            info = get_reward(
                self._product(), s.goal, self.catalog.prices[s.asin or ""], s.options, self._nouns
            )
            s.page, s.done, s.reward = "done", True, info.reward
            return info.reward, {
                "asin": s.asin, "options": dict(s.options), "goal_asin": s.goal["asin"],
                "reward_info": info.to_dict(),
            }
        if target == "back":
            s.page, s.keywords, s.page_num, s.asin, s.options, s.sub = (
                "search", None, 1, None, {}, None,
            )
        elif target == "next":
            self._to_results(s, s.keywords or "", s.page_num + 1)
        elif target == "prev":
            if s.page == "results":
                self._to_results(s, s.keywords or "", s.page_num - 1)
            elif s.page == "sub":
                s.page, s.sub = "item", None
            else:  # item page -> its results page (chosen options are forgotten)
                self._to_results(s, s.keywords or "", s.page_num)
        elif kind == "button":  # description / features / reviews
            s.page, s.sub = "sub", target
        elif kind == "product":
            s.page, s.asin = "item", target
        else:  # an option value; ``target`` is its option name
            s.options[target] = arg
        return 0.0, {}


class WebShopSuite:
    """WebShop environments over one shared catalog, and the benchmark's task splits."""

    name = "webshop"

    def __init__(self, options: WebShopOptions, catalog: Catalog | None = None) -> None:
        self.options = options
        self.catalog = catalog or load_catalog(
            options.data_dir, options.num_products, options.goals, options.seed
        )
        self._nouns = noun_extractor(options.noun_tagger)

    @property
    def max_steps(self) -> int:
        """The agent's step budget (the driver's T for WebShop)."""
        return self.options.max_steps

    def make(self) -> WebShopEnv:
        return WebShopEnv(self.catalog, self.options, self._nouns)

    def task_ids(self, split: str) -> list[str]:
        n = len(self.catalog.goals)
        table = self.options.split_ids or {"test": list(TEST_IDS), "train": list(TRAIN_IDS)}
        if split == "all":
            return [str(i) for i in range(n)]
        if split not in table:
            raise ValueError(f"webshop has splits {sorted(table)} and 'all', not {split!r}")
        return [str(i) for i in table[split] if 0 <= i < n]

    def close(self) -> None:
        pass


@ENVIRONMENTS.register("webshop", options=WebShopOptions)
def make_webshop_suite(options: WebShopOptions) -> WebShopSuite:
    """In-process text WebShop over a catalog directory (BM25 search, benchmark reward)."""
    return WebShopSuite(options)
