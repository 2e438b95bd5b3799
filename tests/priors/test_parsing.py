import numpy as np
import pytest

from amc.priors.parsing import parse_action
from amc.types import INVALID_ACTION

MENU = ["inventory", "get 1 oak log", "craft 4 oak planks using 1 oak log"]


@pytest.mark.parametrize(
    ("text", "env", "expected"),
    [
        ("Thought: logs first.\nAction: get 1 oak log", "textcraft", "get 1 oak log"),
        ("Action: get 1 oak log\nThought: hm\nAction: inventory.", "textcraft", "inventory"),
        ("action:  Craft 4 Oak_Planks using 1 minecraft:oak_log!", "textcraft",
         "craft 4 oak planks using 1 oak log"),
        ("Action: craft 1 x using 1 a ,2 b", "textcraft", "craft 1 x using 1 a, 2 b"),
        ("Thought: go.\n\nAction: Open Door to Kitchen.", "sciworld", "open door to kitchen"),
        ("Reflection: I hold nothing.\nAction: focus on red light bulb", "sciworld",
         "focus on red light bulb"),
        ("Action: Search[ Red Shoes  size 9 ]", "webshop", "search[Red Shoes size 9]"),
        ("Action: click[Buy Now]", "webshop", "click[buy now]"),
        ("**Action:** `a2`", "synthetic", "a2"),
        ("I think I should get wood.", "textcraft", INVALID_ACTION),
        ("Action:", "textcraft", INVALID_ACTION),
        ("", "webshop", INVALID_ACTION),
    ],
)
def test_last_action_line_normalised_per_env(text, env, expected):
    assert parse_action(text, env) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [(" 2", "get 1 oak log"), ("[3]", MENU[2]), ("3.", MENU[2]), ("(1)", "inventory"),
     ("2. get 1 oak log", "get 1 oak log"), (" GET 1 Oak Log", "get 1 oak log"),
     ("9", INVALID_ACTION), ("get 2 oak log", "get 2 oak log")],
)
def test_menu_numbers_and_spellings_map_to_listed_actions(text, expected):
    assert parse_action(text, "textcraft", MENU, prefilled=True) == expected


def test_prefilled_text_is_the_action_but_a_later_action_line_wins():
    assert parse_action(" get 1 oak log\nmore", "textcraft", prefilled=True) == "get 1 oak log"
    assert parse_action("x\nAction: inventory", "textcraft", prefilled=True) == "inventory"


def test_never_raises_on_garbage():
    rng = np.random.default_rng(0)
    alphabet = list("Action:Thought\n[]()0123456789 .,-*`'\"\t\x00é中")
    for _ in range(500):
        text = "".join(rng.choice(alphabet, size=int(rng.integers(0, 60))))
        for env in ("textcraft", "sciworld", "webshop", "other"):
            out = parse_action(text, env, MENU if rng.random() < 0.5 else None,
                               prefilled=bool(rng.random() < 0.5))
            assert isinstance(out, str) and out
