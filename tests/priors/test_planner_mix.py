"""The planner-mix prior: an optimal TextCraft planner mixed with uniformly random valid actions.

What must hold: q = 1 solves every task in exactly the planner's number of steps; the planner
is optimal from *any* inventory (its remaining length drops by one per action); q = 0 is
uniform over the valid actions; q in between takes the planner's action with probability
q + (1 - q)/|menu|; with a skill map, the skill of the planner action's first matching key
replaces q; the memoised menu is the environment's; usage is zero tokens.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from scipy import stats

from amc.envs.textcraft.env import TextCraftOptions, TextCraftSuite
from amc.envs.textcraft.planner import next_action, plan_length, textcraft_menu
from amc.envs.textcraft.tasks import plan
from amc.priors.planner_mix import (
    PlannerMixOptions,
    PlannerMixPrior,
    after,
    load_planner,
    skill,
)
from amc.registry import PRIORS
from amc.types import History, Step


@pytest.fixture(scope="module")
def suite() -> TextCraftSuite:
    return TextCraftSuite(TextCraftOptions())  # default split, depths 1-4


def prior(suite: TextCraftSuite, q: float) -> PlannerMixPrior:
    return PlannerMixPrior(suite, load_planner("textcraft"), PlannerMixOptions(q=q))


async def episode(suite, pr, task_id: str, rng: np.random.Generator, max_steps: int = 60):
    """Run ``pr`` on a task in a fresh environment; returns (history, env)."""
    env = suite.make()
    h = History(task_id, env.reset(task_id))
    while not h.done and h.t < max_steps:
        turn = await pr.propose(h, rng)
        res = env.step(turn.action)
        h = h.extend(Step(turn.raw_text, turn.action, res.observation, res.reward, res.done,
                          turn.usage, res.info))
    return h, env


def test_q1_solves_every_task_in_the_optimal_number_of_steps(suite):
    pr = prior(suite, 1.0)
    tasks = suite.task_ids("all")
    depths = {suite.book.depth(suite.tasks.goal(t)) for t in tasks}
    assert depths == {1, 2, 3, 4} and len(tasks) > 400

    async def run_all():
        for t in tasks:
            h, _ = await episode(suite, pr, t, np.random.default_rng(0))
            n_opt = len(plan(suite.book, suite.tasks.goal(t)))
            assert h.done and h.total_reward == 1.0, t
            assert h.t == n_opt, (t, h.t, n_opt)
            assert all("error" not in s.info for s in h.steps), t

    asyncio.run(run_all())


def test_planner_is_optimal_from_any_reachable_inventory(suite):
    """From states reached by random actions, every planner action shortens the plan by one,
    and following it reaches the goal in exactly plan_length steps."""
    rng = np.random.default_rng(1)
    checked = 0
    for t in suite.task_ids("all")[::7]:
        env = suite.make()
        env.reset(t)
        for _ in range(int(rng.integers(1, 12))):  # a random walk over valid actions
            menu = env.valid_actions()
            if not menu:
                break
            env.step(menu[int(rng.integers(len(menu)))])
        if env.done:
            continue
        left = plan_length(env.book, env.goal, env.inventory)
        for k in range(left, 0, -1):
            assert plan_length(env.book, env.goal, env.inventory) == k
            res = env.step(next_action(env.book, env.goal, env.inventory))
            assert "error" not in res.info, (t, res.observation)
        assert env.done and next_action(env.book, env.goal, env.inventory) is None
        checked += 1
    assert checked > 50


def test_held_intermediates_shorten_the_plan(suite):
    book = suite.book
    goal = "minecraft:wooden_pickaxe"  # 3 planks + 2 sticks (4 sticks from 2 planks)
    empty = plan_length(book, goal, {})
    with_sticks = plan_length(book, goal, {"minecraft:stick": 2})
    assert with_sticks < empty
    assert next_action(book, goal, {goal: 1}) is None


def test_fast_menu_is_the_environments_menu(suite):
    rng = np.random.default_rng(2)
    n = 0
    for t in suite.task_ids("all")[::5]:
        env = suite.make()
        env.reset(t)
        for _ in range(12):
            menu = env.valid_actions()
            assert textcraft_menu(env) == menu
            n += 1
            if not menu:
                break
            env.step(menu[int(rng.integers(len(menu)))])
    assert n > 500


def propose_many(pr, h: History, n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)

    async def go():
        return [(await pr.propose(h, rng)).action for _ in range(n)]

    return asyncio.run(go())


@pytest.mark.parametrize("q", [0.0, 0.5])
def test_action_distribution_is_the_mixture(suite, q):
    """P(a) = q [a = planner's] + (1 - q) / |menu| over the menu (chi-square, fixed seed)."""
    task = suite.task_ids("all")[200]
    env = suite.make()
    h = History(task, env.reset(task))
    for a in env.valid_actions()[:1]:  # one step in: a non-trivial state
        res = env.step(a)
        h = h.extend(Step("", a, res.observation, res.reward, res.done))
    menu = env.valid_actions()
    best = next_action(env.book, env.goal, env.inventory)
    assert best in menu  # so the mixture stays on the menu
    n = 6000
    acts = propose_many(prior(suite, q), h, n, seed=3)
    assert set(acts) <= set(menu)
    counts = np.array([acts.count(a) for a in menu])
    expected = np.array([(1 - q) / len(menu) + (q if a == best else 0.0) for a in menu]) * n
    assert stats.chisquare(counts, expected).pvalue > 1e-3
    if q == 0.0:  # the random-valid prior in distribution: no preference for the planner
        assert abs(counts[menu.index(best)] / n - 1 / len(menu)) < 4 * np.sqrt(1 / len(menu) / n)


def test_uses_the_drivers_menu_when_attached_and_reports_zero_tokens(suite):
    task = suite.task_ids("all")[0]
    env = suite.make()
    h = History(task, env.reset(task)).with_valid_actions(["inventory"])
    rng = np.random.default_rng(4)

    async def go():
        return [await prior(suite, 0.0).propose(h, rng) for _ in range(20)]

    turns = asyncio.run(go())
    assert {t.action for t in turns} == {"inventory"}
    assert all(t.usage.total_tokens == 0 and t.usage.calls == 1 for t in turns)


def test_same_generator_same_actions(suite):
    task = suite.task_ids("all")[100]
    pr = prior(suite, 0.4)
    h1, _ = asyncio.run(episode(suite, pr, task, np.random.default_rng(5), 10))
    h2, _ = asyncio.run(episode(suite, prior(suite, 0.4), task, np.random.default_rng(5), 10))
    assert h1.actions == h2.actions


def test_replay_rejects_a_history_from_other_options(suite):
    other = TextCraftSuite(TextCraftOptions(n_distractors=0))
    task = suite.task_ids("all")[0]
    h = History(task, other.make().reset(task))
    with pytest.raises(ValueError, match="another observation"):
        asyncio.run(prior(suite, 0.5).propose(h, np.random.default_rng(0)))


def test_registry_builds_it_and_rejects_a_benchmark_without_planner():
    from amc.envs.synthetic import SyntheticOptions

    pr = PRIORS.build("planner-mix", {"q": 0.3}, env_name="textcraft",
                      env_options=TextCraftOptions())
    assert isinstance(pr, PlannerMixPrior) and pr.options.q == 0.3
    with pytest.raises(ValueError,
                       match=r"planners for sciworld, textcraft, (.+, )?webshop; not for .synth"):
        PRIORS.build("planner-mix", {}, env_name="synthetic", env_options=SyntheticOptions())
    with pytest.raises(ValueError, match="q"):
        PRIORS.build("planner-mix", {"q": 1.5}, env_name="textcraft", env_options={})


def test_menu_form_prior_acts_only_on_the_menu_and_solves_in_the_menu_plan(suite):
    from amc.envs.textcraft.planner import menu_plan

    legacy = prior(suite, 1.0)
    on_menu = PlannerMixPrior(suite, load_planner("textcraft"),
                              PlannerMixOptions(q=1.0, menu_form=True))
    mixed = PlannerMixPrior(suite, load_planner("textcraft"),
                            PlannerMixOptions(q=0.4, menu_form=True))

    async def off_menu(pr, t, seed=0):
        h, _ = await episode(suite, pr, t, np.random.default_rng(seed))
        env, off = suite.make(), 0
        env.reset(t)
        for s in h.steps:
            off += s.action not in textcraft_menu(env)
            env.step(s.action)
        return h, off

    async def run_all():
        legacy_off = 0
        for t in suite.task_ids("test"):
            h, off = await off_menu(on_menu, t)
            assert off == 0 and h.done and h.t == len(menu_plan(suite, t)), t
            legacy_off += (await off_menu(legacy, t))[1]
            assert (await off_menu(mixed, t, 3))[1] == 0, t
        assert legacy_off > 0  # without menu_form the planner's steps stand out

    asyncio.run(run_all())


def test_menu_form_needs_a_benchmark_hook(suite):
    hooks = load_planner("textcraft")
    bare = type(hooks)(hooks.next_action, hooks.menu)
    with pytest.raises(ValueError, match="menu-form hook"):
        PlannerMixPrior(suite, bare, PlannerMixOptions(menu_form=True))


def state_before(suite: TextCraftSuite, verb: str) -> tuple[History, list[str], str]:
    """A history (planner steps from the start of a depth >= 2 task) whose next planner action
    starts with ``verb``; its menu and that action."""
    env = suite.make()
    for task in suite.task_ids("all")[200:]:
        h = History(task, env.reset(task))
        for _ in range(10):
            best = next_action(env.book, env.goal, env.inventory)
            if best is None:
                break
            if best.startswith(verb) and h.t > 0:
                return h, env.valid_actions(), best
            res = env.step(best)
            h = h.extend(Step("", best, res.observation, res.reward, res.done))
    raise AssertionError(f"no state before a {verb!r}")


@pytest.mark.parametrize("verb", ["get", "craft"])
def test_skill_per_subtask_sets_the_planners_share(suite, verb):
    """With ``skills`` {get: 0.9, craft: 0.1} (q 0.5 unused) the planner's action is taken with
    its verb's skill s: P(a) = s [a = planner's] + (1 - s) / |menu| over the menu (chi-square,
    fixed seed); a prior ignoring the map (s = q = 0.5) fails at either state."""
    h, menu, best = state_before(suite, verb)
    opts = PlannerMixOptions(q=0.5, skills={"get": 0.9, "craft": 0.1})
    s = {"get": 0.9, "craft": 0.1}[verb]
    n = 4000
    acts = propose_many(PlannerMixPrior(suite, load_planner("textcraft"), opts), h, n, seed=5)
    support = [*menu, *([best] if best not in menu else [])]
    assert set(acts) <= set(support)
    counts = np.array([acts.count(a) for a in support])
    expected = np.array([(1 - s) / len(menu) * (a in menu) + (s if a == best else 0.0)
                         for a in support]) * n
    assert stats.chisquare(counts, expected).pvalue > 1e-3


def test_skill_is_the_first_matching_key_else_q():
    opts = PlannerMixOptions(q=0.4, skills={"planks": 0.2, "craft": 0.7})
    assert skill(opts, "craft 4 oak planks using 1 oak log") == 0.2  # declared order wins
    assert skill(opts, "craft 1 stick using 2 bamboo") == 0.7
    assert skill(opts, "get 2 bamboo") == 0.4
    verbs = PlannerMixOptions(q=0.4, skills={"get": 0.9, "craft": 0.3})
    assert skill(verbs, "craft 9 iron nugget using 1 iron ingot") == 0.3  # words, not "nugget"
    assert skill(verbs, "get 1 iron nugget") == 0.9
    with pytest.raises(ValueError):
        PlannerMixOptions(skills={"get": 1.5})


@pytest.mark.parametrize("level", [1.0, 0.1])
def test_feedback_sets_the_skill_of_every_later_step(suite, level):
    """With ``after`` {Inventory: s} (q 0.5): before any listing the planner's share is q; once
    an earlier observation starts ``Inventory:`` it is s (chi-square, fixed seed), both at a
    state right after the listing and one step later; an ``after`` ignored (s = q) fails."""
    h, menu, best = state_before(suite, "get")
    env = suite.make()
    env.reset(h.task_id)
    for s in h.steps:
        env.step(s.action)
    res = env.step("inventory")
    assert res.observation.startswith("Inventory:")
    listed = h.extend(Step("", "inventory", res.observation, res.reward, res.done))
    opts = PlannerMixOptions(q=0.5, after={"Inventory": level})
    pr = PlannerMixPrior(suite, load_planner("textcraft"), opts)
    n = 3000
    for hist, share in ((h, 0.5), (listed, level)):
        acts = propose_many(pr, hist, n, seed=6)
        assert set(acts) <= set([*menu, best])
        if share == 1.0:  # chi-square needs every expected count > 0
            assert set(acts) == {best}
            continue
        counts = np.array([acts.count(a) for a in menu])
        expected = np.array([(1 - share) / len(menu) + (share if a == best else 0.0)
                             for a in menu]) * n
        assert stats.chisquare(counts, expected).pvalue > 1e-3
    later = listed.extend(Step("", best, *_obs(env, best)))
    assert after(opts, later) == level and after(opts, h) is None


def _obs(env, action: str) -> tuple[str, float, bool]:
    res = env.step(action)
    return res.observation, res.reward, res.done


def test_feedback_key_is_the_first_declared_that_any_earlier_observation_has():
    opts = PlannerMixOptions(after={"Crafted": 0.2, "Inventory": 0.9})
    h = History("t", "Crafting commands: ...")
    h = h.extend(Step("", "inventory", "Inventory: [oak log] (1)", 0.0, False))
    assert after(opts, h) == 0.9
    h = h.extend(Step("", "craft 4 oak planks using 1 oak log", "Crafted 4 oak planks", 0, False))
    assert after(opts, h) == 0.2  # declared order, not the latest observation
    assert after(PlannerMixOptions(after={"Inventory": 0.9}),
                 History("t", "Inventory: x")) is None  # the task text is no feedback
