"""WebShop's observed-state summary: the kind of page the agent is on and what it chose.

Read only from the history's text: the page kind from the current observation's layout (the
search box, a results list, a product page, a product's sub-page, the purchase receipt), the
last search from the agent's own ``search[..]`` actions, and the options it clicked on the
current product (a click on a value its product page listed, since it last opened a product).
Never the environment's hidden state (the goal's attributes, the chosen product's record).
"""

from __future__ import annotations

import re

from amc.types import History

_ACTION = re.compile(r"^(search|click)\s*\[\s*(.*?)\s*\]?$", re.IGNORECASE)
_RESULTS = re.compile(r"Page \d+ \(Total results: \d+\)")
_SUB_PAGES = ("description", "features", "reviews", "attributes")


def page_kind(observation: str) -> str:
    """``search``, ``results``, ``item``, ``sub-page``, ``done`` or ``other`` from a page's text."""
    fields = [f.strip().lower() for f in observation.split("[SEP]")]
    if "thank you for shopping with us!" in fields:
        return "done"
    if _RESULTS.search(observation):
        return "results"
    if "buy now" in fields:
        return "item"
    if "< prev" in fields and "back to search" in fields:
        return "sub-page"
    if fields and fields[-1] == "search":
        return "search"
    return "other"


def _options(history: History) -> tuple[str | None, list[str]]:
    """The last search's words and the option values clicked on the product page last shown."""
    search: str | None = None
    chosen: list[str] = []
    listed: set[str] = set()
    pages = [history.observation0, *(s.observation for s in history.steps)]
    for before, step in zip(pages, history.steps, strict=False):
        m = _ACTION.match(step.action.strip())
        if not m:
            continue
        verb, arg = m.group(1).lower(), m.group(2)
        kind = page_kind(before)
        if verb == "search":
            search, chosen = arg, []
        elif kind == "item" and arg.lower() in listed and arg.lower() not in chosen:
            chosen.append(arg.lower())
        if page_kind(step.observation) == "item" and kind == "results":
            chosen = []  # a new product opened: its options start unchosen
        if page_kind(step.observation) == "item":
            listed = {f.strip().lower() for f in step.observation.split("[SEP]")} - {
                "buy now", "< prev", "back to search", *_SUB_PAGES}
    return search, chosen


def webshop_summary(history: History) -> str:
    """``page: ... | searched: ... | options chosen: ...`` from the history's text."""
    search, chosen = _options(history)
    parts = [f"page: {page_kind(history.observation)}"]
    if search is not None:
        parts.append(f"searched: {search}")
    parts.append("options chosen: " + (", ".join(chosen) if chosen else "none"))
    return " | ".join(parts)
