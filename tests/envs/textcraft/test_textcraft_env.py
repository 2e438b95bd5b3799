"""TextCraft rules, determinism, splits and the planner, on both recipe sources."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from amc.envs.textcraft.actions import inventory_after, observed_menu
from amc.envs.textcraft.env import TextCraftOptions, TextCraftSuite
from amc.envs.textcraft.sources import load_datapack, load_minecraft_data
from amc.envs.textcraft.tasks import plan, read_depth_file
from amc.protocols import Environment, EnvSuite
from amc.registry import ENVIRONMENTS

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def suite() -> TextCraftSuite:
    return TextCraftSuite(TextCraftOptions())


def task_of(suite: TextCraftSuite, item: str) -> str:
    return str(suite.tasks.goals.index(item))


def test_registered_and_protocols(suite: TextCraftSuite) -> None:
    built = ENVIRONMENTS.build("textcraft", {"n_distractors": 0})
    assert isinstance(built, EnvSuite) and isinstance(built.make(), Environment)
    with pytest.raises(ValueError, match="reward"):
        ENVIRONMENTS.build("textcraft", {"reward": "sparse"})


def test_observation_format_and_distractors(suite: TextCraftSuite) -> None:
    env = suite.make()
    obs = env.reset(task_of(suite, "minecraft:wooden_pickaxe"))
    head, goal = obs.split("\n\n")
    assert head.startswith("Crafting commands:\n") and goal == "Goal: craft wooden pickaxe."
    cmds = head.splitlines()[1:]
    assert "craft 1 wooden pickaxe using 3 planks, 2 stick" in cmds
    assert "craft 4 oak planks using 1 oak log" in cmds
    tree = {r.command for r in suite.book.tree_recipes("minecraft:wooden_pickaxe")}
    assert len(set(cmds) - tree) == 10  # the reference server's distractor count
    easy = TextCraftSuite(TextCraftOptions(n_distractors=0)).make()
    assert set(easy.reset("stick").split("\n\n")[0].splitlines()[1:]) == {
        r.command for r in suite.book.tree_recipes("minecraft:stick")}


def test_get_only_base_items_and_failures_continue(suite: TextCraftSuite) -> None:
    env = suite.make()
    env.reset("wooden pickaxe")
    r = env.step("get 2 oak planks")  # craftable: cannot be fetched
    assert (r.observation, r.reward, r.done) == ("Could not find oak planks", 0.0, False)
    assert env.step("get 1 planks").observation == "Could not find planks"  # a tag
    assert env.step("get 1 unobtainium").observation == "Could not find unobtainium"
    assert env.step("dance").observation == "Could not execute dance"
    assert env.step("[invalid action]").reward == 0.0
    r = env.step("get 3 oak log")
    assert r.observation == "Got 3 oak log" and env.inventory == {"minecraft:oak_log": 3}
    assert env.step("inventory").observation == "Inventory: [oak log] (3) "


def test_craft_consumes_exact_counts_and_tags_need_concrete_items(suite: TextCraftSuite) -> None:
    env = suite.make()
    env.reset("wooden pickaxe")
    env.step("get 2 oak log")
    r = env.step("craft 8 oak planks using 2 oak log")  # twice the recipe: two actions needed
    assert r.observation.startswith("Could not find a valid recipe") and r.reward == 0
    assert env.step("craft 4 oak planks using 1 oak log").observation == (
        "Crafted 4 minecraft:oak_planks")
    assert env.inventory == {"minecraft:oak_log": 1, "minecraft:oak_planks": 4}
    r = env.step("craft 4 stick using 2 planks")  # a tag must be named by a concrete item
    assert r.observation == "Could not find enough items to craft minecraft:stick"
    env.step("craft 4 stick using 2 oak planks")
    assert env.inventory == {"minecraft:oak_log": 1, "minecraft:oak_planks": 2,
                             "minecraft:stick": 4}
    r = env.step("craft 1 wooden pickaxe using 3 oak planks, 2 stick")  # only 2 planks
    assert r.observation.startswith("Could not find enough items") and not r.done
    env.step("craft 4 oak planks using 1 oak log")
    r = env.step("craft 1 wooden pickaxe using 2 stick, 3 oak planks")
    assert (r.reward, r.done) == (1.0, True)
    assert env.inventory["minecraft:wooden_pickaxe"] == 1
    assert env.step("inventory").observation == "The episode is over."


def test_fork_is_independent_and_valid_actions_succeed(suite: TextCraftSuite) -> None:
    env = suite.make()
    env.reset("wooden pickaxe")
    env.step("get 1 oak log")
    child = env.fork()
    child.step("craft 4 oak planks using 1 oak log")
    assert env.inventory == {"minecraft:oak_log": 1}
    assert child.inventory == {"minecraft:oak_planks": 4}
    assert "craft 4 stick using 2 oak planks" in child.valid_actions()
    for a in child.valid_actions():
        probe = child.fork()
        r = probe.step(a)
        assert "error" not in r.info, (a, r.observation)
    assert env.step("craft 4 oak planks using 1 oak log").reward == 0.0


def test_dense_reward_sums_to_one_and_binary_pays_once() -> None:
    for mode in ("dense", "binary"):
        s = TextCraftSuite(TextCraftOptions(reward=mode))
        env = s.make()
        for goal in ("minecraft:wooden_pickaxe", "minecraft:piston", "minecraft:bookshelf"):
            env.reset(goal)
            rewards = [env.step(a).reward for a in plan(s.book, goal)]
            assert env.done and sum(rewards) == pytest.approx(1.0)
            if mode == "dense":
                assert sum(r > 0 for r in rewards) > 1  # progress is paid along the way
            else:
                assert rewards[-1] == 1.0 and sum(rewards[:-1]) == 0.0


def test_default_split_planner_solves_every_task_within_budget(suite: TextCraftSuite) -> None:
    env = suite.make()
    test, train = suite.task_ids("test"), suite.task_ids("train")
    assert not set(test) & set(train) and len(test) > 50 and len(train) > 200
    for tid in suite.task_ids("all"):
        env.reset(tid)
        depth = suite.book.depth(env.goal)
        assert 1 <= depth <= 4
        actions = plan(suite.book, env.goal)
        assert len(actions) <= 20
        total = sum(env.step(a).reward for a in actions)
        assert env.done and total == 1.0, (tid, env.goal)


def test_default_split_is_seeded() -> None:
    a = TextCraftSuite(TextCraftOptions(seed=0))
    assert a.task_ids("test") == TextCraftSuite(TextCraftOptions(seed=0)).task_ids("test")
    assert a.task_ids("test") != TextCraftSuite(TextCraftOptions(seed=1)).task_ids("test")
    deep = TextCraftSuite(TextCraftOptions(min_depth=3))
    assert all(deep.book.depth(deep.tasks.goal(t)) >= 3 for t in deep.task_ids("all"))


def test_deterministic_across_processes_and_hash_seeds(suite: TextCraftSuite) -> None:
    code = (
        "from amc.envs.textcraft.env import *; s = TextCraftSuite(TextCraftOptions());"
        "e = s.make();"
        "import hashlib; print(hashlib.sha256('|'.join(e.reset(t) for t in "
        "s.task_ids('test')[:40]).encode()).hexdigest())"
    )
    outs = {
        subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                       env={"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"}, check=True
                       ).stdout.strip()
        for seed in ("1", "2")
    }
    assert len(outs) == 1


def test_minecraft_data_book_folds_tag_variants() -> None:
    book = load_minecraft_data()
    assert "minecraft:oak_planks" in book.members("minecraft:planks")
    assert book.is_base("minecraft:oak_log") and not book.is_base("minecraft:stick")
    assert book.depth("minecraft:stick") == 1 and book.depth("minecraft:wooden_pickaxe") == 2
    assert load_minecraft_data().recipes == book.recipes


# ----- fidelity with the benchmark's own data (skips when ../shared/data is absent) -----


def test_datapack_depths_match_the_paper_depth_file(recipes_dir: Path, splits_dir: Path) -> None:
    book = load_datapack(recipes_dir)
    rows = read_depth_file(splits_dir / "textcraft_crafting_depths.csv")
    assert dict(book.goal_items()) == dict(rows)
    assert Counter(d for _, d in rows) == {1: 148, 2: 273, 3: 112, 4: 11}


def test_paper_split_goals_and_planner(recipes_dir: Path, splits_dir: Path) -> None:
    opts = TextCraftOptions(recipe_source=str(recipes_dir), split="paper", splits_dir=splits_dir,
                            min_depth=3, max_depth=4)
    s = TextCraftSuite(opts)
    test, train = s.task_ids("test"), s.task_ids("train")
    assert (len(test), len(train)) == (27, 44)
    rows = read_depth_file(splits_dir / "textcraft_crafting_depths.csv")
    env = s.make()
    steps = []
    for tid in test:
        obs = env.reset(tid)
        goal, depth = rows[int(tid) % len(rows)]
        assert env.goal == goal and s.book.depth(goal) == depth in (3, 4)
        assert obs.endswith(f"Goal: craft {goal.removeprefix('minecraft:').replace('_', ' ')}.")
        actions = plan(s.book, goal)
        assert sum(env.step(a).reward for a in actions) == 1.0 and env.done
        steps.append(len(actions))
    assert sum(n <= 20 for n in steps) >= 26  # all but one fit the 20-step budget
    full = TextCraftSuite(opts.model_copy(update={"min_depth": 1}))
    assert (len(full.task_ids("test")), len(full.task_ids("train"))) == (100, 374)


# ----- the reference server's parser (exact) and the opt-in lenient one -----
# (action, observation with parser exact, observation with parser lenient), in a state holding
# 1 oak log; an exact observation is what AgentGym's TextCraft server answers.
PARSES = [
    ("get 1 oak log", "Got 1 oak log", "Got 1 oak log"),
    ("get 1  oak log", "Could not find  oak log", "Got 1 oak log"),
    ("Get 1 oak log", "Could not execute Get 1 oak log", "Got 1 oak log"),
    ("get 1 oak log ", "Could not find oak log ", "Got 1 oak log"),
    (" get 1 oak log", "Could not execute  get 1 oak log", "Got 1 oak log"),
    ("get 1 Oak Log", "Could not find Oak Log", "Got 1 Oak Log"),
    ("get 0 oak log", "Got 0 oak log", "Could not find oak log"),
    ("Inventory", "Could not execute Inventory", "Inventory: [oak log] (1) "),
    ("inventory ", "Inventory: [oak log] (1) ", "Inventory: [oak log] (1) "),
    ("craft 4 oak planks using 1 oak log ", "Crafted 4 minecraft:oak_planks",
     "Crafted 4 minecraft:oak_planks"),  # the reference strips each ingredient
    ("craft 4  oak planks using 1 oak log",  # no item ' oak planks' (the reference's text
     "Could not find a valid recipe for  oak planks",  # here is a Python repr: see the docs)
     "Crafted 4 minecraft:oak_planks"),
    ("Craft 4 oak planks using 1 oak log", "Could not execute Craft 4 oak planks using 1 oak log",
     "Crafted 4 minecraft:oak_planks"),
    ("craft 4 oak planks using 1 oak  log", "Could not find enough items to craft "
     "minecraft:oak_planks", "Crafted 4 minecraft:oak_planks"),
]


@pytest.mark.parametrize(("action", "exact", "lenient"), PARSES)
def test_exact_parser_is_the_reference_servers(action: str, exact: str, lenient: str) -> None:
    for parser, expected in (("exact", exact), ("lenient", lenient)):
        env = TextCraftSuite(TextCraftOptions(parser=parser)).make()
        env.reset("wooden pickaxe")
        env.step("get 1 oak log")
        r = env.step(action)
        assert r.observation == expected, parser
        assert ("error" in r.info) == (expected.startswith("Could")), parser


def test_default_parser_is_exact_and_paper_config_pins_it() -> None:
    assert TextCraftOptions().parser == "exact"
    import yaml

    cfg = yaml.safe_load((REPO / "configs/paper-textcraft.yaml").read_text())
    env = cfg.get("env", cfg)
    assert env["options"]["parser"] == "exact"


def test_get_zero_adds_an_empty_stack_as_the_reference() -> None:
    env = TextCraftSuite(TextCraftOptions()).make()
    env.reset("wooden pickaxe")
    assert env.step("get 0 oak log").observation == "Got 0 oak log"
    assert env.step("inventory").observation == "Inventory: [oak log] (0) "
    assert env.step("craft 4 oak planks using 1 oak log").observation == (
        "Could not find enough items to craft minecraft:oak_planks")


def test_inventory_from_observed_steps_matches_the_env(suite: TextCraftSuite) -> None:
    """What the AgentGym client rebuilds from (action, observation) pairs is the env's own
    inventory, along random walks that mix valid, invalid and zero-count actions."""
    rng = np.random.default_rng(7)
    noise = ["get 0 oak log", "Get 1 oak log", "craft 4 stick using 2 planks", "dance"]
    for task in suite.task_ids("test")[:12]:
        env = suite.make()
        obs0 = env.reset(task)
        steps = []
        for _ in range(15):
            menu = env.valid_actions() or ["inventory"]
            pool = [*menu, *noise]
            action = pool[int(rng.integers(len(pool)))]
            steps.append((action, env.step(action).observation))
            assert inventory_after(steps) == env.inventory, (task, steps)
            if env.done:
                break
        assert observed_menu(obs0, steps, env.done, lambda: suite.book) == env.valid_actions()
