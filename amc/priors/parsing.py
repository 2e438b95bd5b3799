"""One parser from model text to an environment action; it never raises.

The agent answers in the ReAct format (``Thought: ...`` then ``Action: ...``). We take the
*last* ``Action:`` line, keep the text after the colon on that line, and normalise it for the
environment (its benchmark record's ``normalise``). When the prompt listed a numbered action
menu, a bare number (``3``, ``[3]``, ``3.``) maps to that listed action, and text that matches
a listed action up to case and spacing is replaced by the listed spelling. Anything unusable becomes
:data:`amc.types.INVALID_ACTION`, which the environment answers with an error observation.

Example::

    parse_action("Thought: I need logs.\\nAction: get 1 oak log", "textcraft")  # 'get 1 oak log'
    parse_action(" 2", "textcraft", ["inventory", "get 1 oak log"], prefilled=True)
    # -> 'get 1 oak log'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from amc.envs.benchmarks import get_benchmark
from amc.types import INVALID_ACTION

_ACTION_LINE = re.compile(
    r"^[\s>*#`\-]*action\s*(?:\d+\s*)?:\s*(.*)$", re.IGNORECASE | re.MULTILINE
)
_MENU_NUMBER = re.compile(r"^[\[(#]?\s*(\d{1,4})\s*[\]).:]?(?:\s+(.*))?$")
_WS = re.compile(r"\s+")
_WRAPPERS = "`\"'* "


def _collapse(s: str) -> str:
    return _WS.sub(" ", s).strip()


def _key(s: str, norm: Callable[[str], str]) -> str:
    return norm(s).lower()


def extract_action_text(text: str, *, prefilled: bool = False) -> str | None:
    """The raw text after the last ``Action:`` (first line only), or ``None`` if there is none.

    ``prefilled`` means the prompt itself ended with ``Action:``, so ``text`` starts with the
    action (completion models); a later ``Action:`` line in the text still wins.
    """
    matches = list(_ACTION_LINE.finditer(text))
    if matches:
        return matches[-1].group(1)
    if prefilled:
        return text.strip().split("\n", 1)[0] if text.strip() else None
    return None


def parse_action(
    text: str,
    env: str,
    valid_actions: Sequence[str] | None = None,
    *,
    prefilled: bool = False,
) -> str:
    """Turn a model's text into one action for ``env``; :data:`INVALID_ACTION` on failure.

    Args:
        text: the model's completion (a full ReAct turn, or only the action if ``prefilled``).
        env: environment registry name (its benchmark record's normaliser).
        valid_actions: the numbered menu shown in the prompt, if any.
        prefilled: the prompt ended with ``Action:``.
    """
    try:
        raw = extract_action_text(text or "", prefilled=prefilled)
    except Exception:  # never raise: a broken answer is an invalid action
        return INVALID_ACTION
    if raw is None:
        return INVALID_ACTION
    norm = get_benchmark(env).normalise
    raw = _collapse(raw).strip(_WRAPPERS).strip()
    if valid_actions:
        m = _MENU_NUMBER.match(raw)
        if m:
            k = int(m.group(1))
            if 1 <= k <= len(valid_actions):
                return valid_actions[k - 1]
            if m.group(2) is None:  # a number outside the menu and nothing else
                return INVALID_ACTION
            raw = m.group(2)
        by_key = {_key(v, norm): v for v in valid_actions}
        hit = by_key.get(_key(raw, norm))
        if hit is not None:
            return hit
    action = norm(raw)
    return action if action else INVALID_ACTION
