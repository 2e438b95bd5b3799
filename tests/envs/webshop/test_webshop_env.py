"""The in-process WebShop on the generated fixture catalog: pages, actions, reward, forks."""

from __future__ import annotations

from pathlib import Path

import pytest

from amc.envs.webshop.catalog import MissingCatalogError, load_catalog
from amc.envs.webshop.env import (
    WebShopEnv,
    WebShopOptions,
    WebShopSuite,
    normalize_webshop_action,
)
from amc.protocols import Environment, EnvSuite
from amc.registry import ENVIRONMENTS


def _two_option_goal(g) -> bool:
    """A t-shirt goal: two attributes, a colour and a size to choose."""
    return isinstance(g["goal_options"], dict) and set(g["goal_options"]) == {"color", "size"}


def _open_goal_item(suite: WebShopSuite, task: int) -> tuple[WebShopEnv, dict]:
    """Reset to ``task``, search for the goal product's title and open its item page."""
    env = suite.make()
    env.reset(str(task))
    product = suite.catalog.by_asin[env.goal["asin"]]
    r = env.step(f"search[{product['Title']}]")
    assert r.reward == 0 and not r.done
    assert f"click[{product['asin'].lower()}]" in env.valid_actions()
    r = env.step(f"click[{product['asin'].lower()}]")
    assert r.observation.endswith("Buy Now") and product["Title"] in r.observation
    return env, product


def test_registered_and_protocols(catalog_dir: Path) -> None:
    suite = ENVIRONMENTS.build("webshop", {"data_dir": str(catalog_dir), "num_products": 36})
    assert isinstance(suite, EnvSuite)
    env = suite.make()
    assert isinstance(env, Environment) and env.io_bound is False
    # one catalog for every suite of the same setting: envs hold only their session
    again = ENVIRONMENTS.build("webshop", {"data_dir": str(catalog_dir), "num_products": 36})
    assert again.catalog is suite.catalog


def test_search_page_observation(suite: WebShopSuite) -> None:
    env = suite.make()
    obs = env.reset("0")
    assert obs == f"WebShop [SEP] Instruction: [SEP] {env.instruction} [SEP] Search"
    assert env.valid_actions() == ["search[<keywords>]"]
    assert env.available_actions() == {"has_search_bar": True, "clickables": ["search"]}
    assert env.final_action() == "click[buy now]"


def test_scripted_episode_full_match_earns_one(suite: WebShopSuite, find_goal) -> None:
    task = find_goal(_two_option_goal)
    env, product = _open_goal_item(suite, task)
    for value in env.goal["goal_options"].values():
        r = env.step(f"click[{value}]")
        assert r.reward == 0 and not r.done
    r = env.step("click[Buy Now]")
    assert r.done and r.reward == pytest.approx(1.0)
    assert r.info["asin"] == product["asin"] == r.info["goal_asin"]
    assert r.observation.startswith("Thank you for shopping with us!")
    assert env.valid_actions() == [] and env.final_action() is None
    after = env.step("click[buy now]")
    assert after.done and after.reward == 0


def test_partial_rewards_documented(suite: WebShopSuite, find_goal) -> None:
    """Right product, wrong colour: (2 attrs + size + price) / (2 + 2 + 1) = 0.8.

    Right product, no option chosen: (2 + 0 + 1) / 5 = 0.6.
    """
    task = find_goal(_two_option_goal)
    env, product = _open_goal_item(suite, task)
    goal = env.goal
    wrong = next(c for c in product["options"]["color"] if c != goal["goal_options"]["color"])
    env.step(f"click[{wrong}]")
    env.step(f"click[{goal['goal_options']['size']}]")
    r = env.step("click[buy now]")
    assert r.reward == pytest.approx(0.8)
    assert r.info["reward_info"]["num_option_matches"] == 1

    env, _ = _open_goal_item(suite, task)
    assert env.step("click[buy now]").reward == pytest.approx(0.6)


def test_invalid_actions_leave_state_unchanged(suite: WebShopSuite) -> None:
    env = suite.make()
    env.reset("3")
    env.step("search[t-shirt]")
    before_obs, before_actions = env.observation(), env.valid_actions()
    for bad in ["click[buy now]", "click[fx99999999]", "Click[back to search]",
                "click[search]", "search[]", "[invalid action]", "buy it", "click[]"]:
        r = env.step(bad)
        assert (r.observation, r.reward, r.done) == (before_obs, 0.0, False), bad
        assert "invalid action" in r.info["error"]
        assert env.valid_actions() == before_actions


def test_pagination_and_navigation(suite: WebShopSuite) -> None:
    env = suite.make()
    env.reset("1")
    # every fixture product's first bullet point ends in "design": 36 hits, 4 pages
    r = env.step("search[design]")
    assert "Page 1 (Total results: 36) [SEP] Next >" in r.observation
    assert "click[< prev]" not in env.valid_actions()
    page1 = [a for a in env.valid_actions() if a.startswith("click[fx")]
    assert len(page1) == 10
    agentgym = env.available_actions()
    assert not agentgym["has_search_bar"]
    assert agentgym["clickables"] == ["back to search", "next >"] + [a[6:-1] for a in page1]
    r = env.step("click[next >]")
    assert "Page 2 (Total results: 36) [SEP] < Prev [SEP] Next >" in r.observation
    page2 = [a for a in env.valid_actions() if a.startswith("click[fx")]
    assert len(page2) == 10 and not set(page1) & set(page2)
    env.step(page2[0])  # item page, then its sub-pages and back
    item_obs = env.observation()
    asin = page2[0][len("click[") : -1].upper()
    product = suite.catalog.by_asin[asin]
    r = env.step("click[features]")
    assert r.observation.endswith(" [SEP] ".join(product["BulletPoints"]))
    assert env.step("click[< prev]").observation == item_obs
    r = env.step("click[description]")
    assert r.observation.endswith(product["Description"])
    env.step("click[< prev]")
    r = env.step("click[< prev]")  # item -> the results page it came from
    assert "Page 2 (Total results: 36)" in r.observation
    r = env.step("click[back to search]")
    assert r.observation.startswith("WebShop [SEP] Instruction:")


def test_search_works_from_any_page(suite: WebShopSuite, find_goal) -> None:
    env, _ = _open_goal_item(suite, find_goal(_two_option_goal))
    r = env.step("search[coffee mug]")  # upstream accepts search without a search bar
    assert "(Total results:" in r.observation


def test_forks_are_independent(suite: WebShopSuite, find_goal) -> None:
    task = find_goal(_two_option_goal)
    env, _ = _open_goal_item(suite, task)
    color = env.goal["goal_options"]["color"]
    env.step(f"click[{color}]")
    child = env.fork()
    parent_obs = env.observation()
    child.step(f"click[{env.goal['goal_options']['size']}]")
    child.step("click[back to search]")
    assert env.observation() == parent_obs and child.observation() != parent_obs
    assert env._s is not None and env._s.options == {"color": color}  # not shared with child
    # the parent's purchase only has the colour: (2 + 1 + 1) / 5
    assert env.step("click[buy now]").reward == pytest.approx(0.8)
    assert not child.step("search[mug]").done


def test_step_budget_and_forced_buy(catalog_dir: Path, find_goal) -> None:
    opts = WebShopOptions(data_dir=str(catalog_dir), max_steps=3)
    suite = WebShopSuite(opts)
    env, _ = _open_goal_item(suite, find_goal(_two_option_goal))  # 2 steps
    assert not env.step("click[description]").done  # 3rd agent step: budget reached
    assert env.final_action() == "click[buy now]"
    r = env.step(env.final_action())  # forced buy on a sub-page: invalid, episode ends
    assert r.done and r.reward == 0 and r.info["truncated"]

    env2, _ = _open_goal_item(suite, find_goal(_two_option_goal))
    env2.step("click[features]")
    r = env2.step("click[< prev]")  # step 4 is the forced-step slot: any action ends it
    assert r.done and r.info["truncated"]

    no_force = WebShopSuite(WebShopOptions(data_dir=str(catalog_dir), max_steps=3,
                                           forced_buy=False))
    env3, _ = _open_goal_item(no_force, find_goal(_two_option_goal))
    assert env3.final_action() is None
    r = env3.step("click[features]")
    assert r.done and r.info["truncated"] and r.reward == 0


def test_forced_buy_on_item_page_scores(catalog_dir: Path, find_goal) -> None:
    suite = WebShopSuite(WebShopOptions(data_dir=str(catalog_dir), max_steps=2))
    env, _ = _open_goal_item(suite, find_goal(_two_option_goal))
    r = env.step(env.final_action())
    assert r.done and r.reward == pytest.approx(0.6)


def test_task_ids_and_reset_errors(suite: WebShopSuite, catalog_dir: Path) -> None:
    n = len(suite.catalog.goals)
    assert suite.task_ids("test") == [str(i) for i in range(5, 55) if i < n]
    assert "5" not in suite.task_ids("train") and "0" in suite.task_ids("train")
    assert suite.task_ids("all") == [str(i) for i in range(n)]
    custom = WebShopSuite(WebShopOptions(data_dir=str(catalog_dir),
                                         split_ids={"dev": [2, 1, 10_000]}))
    assert custom.task_ids("dev") == ["2", "1"]
    with pytest.raises(ValueError, match="splits"):
        suite.task_ids("valid")
    env = suite.make()
    with pytest.raises(ValueError, match="out of range"):
        env.reset(str(n))
    with pytest.raises(ValueError, match="goal indices"):
        env.reset("abc")
    with pytest.raises(RuntimeError, match="reset"):
        suite.make().step("search[x]")


def test_missing_catalog_names_files(tmp_path: Path) -> None:
    with pytest.raises(MissingCatalogError) as err:
        ENVIRONMENTS.build("webshop", {"data_dir": str(tmp_path)})
    msg = str(err.value)
    assert "items_shuffle_1000.json" in msg and "items_ins_v2_1000.json" in msg
    assert "amc fetch webshop" in msg and "items_human_ins" not in msg
    with pytest.raises(MissingCatalogError, match=r"items_human_ins\.json"):
        load_catalog(str(tmp_path), goals="human")


def test_human_goals(catalog_dir: Path) -> None:
    suite = WebShopSuite(WebShopOptions(data_dir=str(catalog_dir), goals="human"))
    assert len(suite.catalog.goals) == 12  # one per third of the 36 fixture products
    env = suite.make()
    env.reset("0")
    goal = env.goal
    assert isinstance(goal["goal_options"], list)
    product = suite.catalog.by_asin[goal["asin"]]
    env.step(f"search[{product['Title']}]")
    env.step(f"click[{product['asin'].lower()}]")
    for v in goal["goal_options"]:
        env.step(f"click[{v}]")
    assert env.step("click[buy now]").reward == pytest.approx(1.0)


def test_search_is_deterministic_and_ranked(suite: WebShopSuite) -> None:
    hits = suite.catalog.search("coffee mug dishwasher safe")
    assert hits and len(hits) <= 50
    assert all("Coffee Mug" in suite.catalog.by_asin[a]["Title"] for a in hits[:3])
    assert suite.catalog.search("coffee mug dishwasher safe") == hits
    assert suite.catalog.search("the and of") == ()  # only stop words: no results


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("click[Buy Now]", "click[Buy Now]"),
        (" Click [ Buy Now ].", "click[Buy Now]"),
        ("`search[red mug]`", "search[red mug]"),
        ("SEARCH[ red mug ]\nObservation: ...", "search[red mug]"),
        ('"click[< Prev]"', "click[< Prev]"),
        ("think[hmm]", "think[hmm]"),
        ("", ""),
    ],
)
def test_normalize_webshop_action(raw: str, expected: str) -> None:
    assert normalize_webshop_action(raw) == expected
