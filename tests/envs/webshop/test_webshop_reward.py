"""The benchmark's purchase reward: attributes, options, price and the type factor."""

from __future__ import annotations

from typing import Any

import pytest

from amc.envs.webshop.reward import (
    attribute_matches,
    get_reward,
    heuristic_nouns,
    normalize_color,
    noun_extractor,
    option_matches,
    type_reward,
)

CAT = "Clothing, Shoes & Jewelry › Men › Clothing › Shirts"


def product(**kw: Any) -> dict[str, Any]:
    p = {
        "name": "Acme Cotton Crew Shirt", "query": "men's shirts", "product_category": CAT,
        "Attributes": ["machine wash", "short sleeve"], "BulletPoints": ["Soft fabric."],
        "Description": "A relaxed fit shirt.",
    }
    p.update(kw)
    p["Title"] = p["name"]
    return p


def goal(**kw: Any) -> dict[str, Any]:
    g = {
        "name": "Acme Cotton Crew Shirt", "query": "men's shirts", "product_category": CAT,
        "attributes": ["machine wash", "relaxed fit"], "goal_options": {"color": "black"},
        "price_upper": 30.0,
    }
    g.update(kw)
    return g


def test_attributes_fuzzy_or_verbatim() -> None:
    p = product()
    assert attribute_matches(p, ["machine wash"]) == 1  # annotated
    assert attribute_matches(p, ["Machine-Wash"]) == 1  # fuzzy (case, punctuation)
    assert attribute_matches(p, ["relaxed fit"]) == 1  # verbatim in the description
    assert attribute_matches(p, ["soft fabric"]) == 1  # verbatim in the features
    assert attribute_matches(p, ["long sleeve", "water resistant"]) == 0


def test_options_pairs_and_strings() -> None:
    # synthetic goals compare (name, value) pairs; a colour value normalises the pair
    assert option_matches(["black"], {"color": "black"}) == 1
    assert option_matches(["jet black"], {"color": "black"}) == 1
    assert option_matches(["large"], {"size": "large"}) == 1  # tokens "size large" ⊇ "large"
    assert option_matches(["x-large"], {"size": "large"}) == 0
    assert option_matches(["white"], {"color": "black"}) == 0
    # human goals list plain strings; "navy blue" normalises to "blue" (earlier in the
    # vocabulary) so a chosen "navy" misses it, exactly as in the benchmark
    assert option_matches(["large", "navy"], ["navy blue", "large"]) == 1
    assert option_matches(["large", "navy blue"], ["navy blue", "large"]) == 2
    assert option_matches([], ["large"]) == 0


def test_normalize_color_first_in_vocabulary_order() -> None:
    assert normalize_color("light blue") == "blue"
    assert normalize_color("x-large") == "x-large"
    assert normalize_color(("color", "red")) == "red"
    assert normalize_color(("size", "medium")) == ("size", "medium")


def test_type_factor_cases() -> None:
    nouns = heuristic_nouns
    assert type_reward(product(), goal(), nouns)[0] == 1.0  # query match
    other = dict(query="other", product_category="A › B › C")
    # share 2+ category levels, title overlap 1/4 -> 1.0
    p = product(query="x", name="Acme Widget")
    assert type_reward(p, goal(), nouns)[:3] == (1.0, False, True)
    # no query/category match; title overlap 1/4 = 0.25 > 0.2 -> 1.0
    assert type_reward(product(name="Acme Bottle", **other), goal(), nouns)[0] == 1.0
    # 1/6 of the goal's nouns -> 0.5
    g6 = goal(name="Acme Cotton Crew Shirt Pack Bundle")
    assert type_reward(product(name="Acme Bottle", **other), g6, nouns)[0] == 0.5
    # 1/11 < 0.1 -> 0.1
    g11 = goal(name="Acme alpha beta gamma delta epsilon zeta eta theta iota kappa")
    assert type_reward(product(name="Acme Bottle", **other), g11, nouns)[0] == 0.1
    # no shared noun -> 0
    assert type_reward(product(name="Bottle", **other), goal(), nouns)[0] == 0.0
    # a goal title without nouns scores 0.2 (not > 0.2): 0.5 without query/category match
    r, _, _, title = type_reward(product(**other), goal(name="the and of"), nouns)
    assert (r, title) == (0.5, 0.2)


def test_total_reward_formula() -> None:
    p = product()
    # attrs 2/2 (annotated + description), option 1/1, price ok: (2 + 1 + 1) / 4
    assert get_reward(p, goal(), 20.0, {"color": "black"}).reward == pytest.approx(1.0)
    # wrong colour and too expensive: (2 + 0 + 0) / 4
    info = get_reward(p, goal(), 35.0, {"color": "white"})
    assert info.reward == pytest.approx(0.5)
    assert (info.r_price, info.r_option, info.r_att) == (False, 0.0, 1.0)
    # one attribute and one of two options, price ok, type 1: (1 + 1 + 1) / 5
    g = goal(attributes=["machine wash", "waterproof"],
             goal_options={"color": "black", "size": "large"})
    assert get_reward(p, g, 10.0, {"color": "black", "size": "small"}).reward == pytest.approx(0.6)
    # the same purchase with r_type 0.5: 0.3
    half = product(query="x", product_category="A › B", name="Acme Bottle")
    g6 = dict(g, name="Acme Cotton Crew Shirt Pack Bundle")
    info = get_reward(half, g6, 10.0, {"color": "black", "size": "small"})
    assert info.r_type == 0.5
    assert info.reward == pytest.approx(0.5 * 3 / 5)
    assert 0.0 <= info.reward <= 1.0


def test_noun_tagger_spec() -> None:
    assert noun_extractor("heuristic")("The Red Shirt for Men") == ["red", "shirt", "men"]
    with pytest.raises(ValueError, match="noun_tagger"):
        noun_extractor("nltk")
