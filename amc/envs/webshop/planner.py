"""A WebShop oracle planner for the planner-mix prior: search, open the target, choose, buy.

It knows the hidden goal (it is a simulation instrument, not an agent) and acts on the current
page only, so it recovers from any detour a random action took:

- search page: ``search[<the instruction's words>]``;
- results page: the goal's product when it is on this page, else ``next >`` / ``< prev``
  towards the page that lists it, else (not among the results) ``back to search``;
- item page of another product, or a description/features/reviews page: ``< prev``;
- the goal's item page: click each goal option value not chosen yet, then ``buy now``.

The search uses the instruction's words (what an agent reads); a goal whose product such a
search never lists cannot be solved by this planner, and the tests check that the demo catalog
has none. Reading the session (page, product, chosen options) uses the environment's internal
state, which this module shares a package with.
"""

from __future__ import annotations

import re

from amc.envs.webshop.env import BUY, PRODUCT_WINDOW, WebShopEnv


def search_words(instruction: str) -> str:
    """The instruction as search keywords: lower case, punctuation dropped."""
    return " ".join(re.findall(r"[a-z0-9]+(?:['.-][a-z0-9]+)*", instruction.lower()))


def webshop_next_action(env: object) -> str | None:
    """The next action of the oracle plan from the current page (None: episode over)."""
    if not isinstance(env, WebShopEnv):
        raise TypeError(f"the WebShop planner needs a WebShopEnv, got {type(env)}")
    s = env._session()
    target = s.goal["asin"]
    if s.done:
        return None
    if s.page == "search":
        return f"search[{search_words(s.goal['instruction_text'])}]"
    if s.page == "results":
        results = env.catalog.search(s.keywords) if s.keywords else ()
        if target not in results:
            return "click[back to search]"
        page = results.index(target) // PRODUCT_WINDOW + 1
        if page == s.page_num:
            return f"click[{target.lower()}]"
        return "click[next >]" if page > s.page_num else "click[< prev]"
    if s.page == "sub" or s.asin != target:
        return "click[< prev]"
    return _choose_or_buy(env, s.goal, s.options)


def _choose_or_buy(env: WebShopEnv, goal: dict, chosen: dict[str, str]) -> str:
    """On the goal's item page: the first goal option value not chosen yet, else buy."""
    wanted = goal.get("goal_options") or {}
    values = wanted.values() if isinstance(wanted, dict) else wanted  # human goals: a list
    clicks = env.clickables()
    for v in (str(x).lower() for x in values):
        if v in clicks and chosen.get(clicks[v][1]) != v:
            return f"click[{v}]"
    return f"click[{BUY}]"
