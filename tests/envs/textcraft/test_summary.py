"""TextCraft's observed-state summary: exact against the environment's own inventory on real
episodes, computed from the history's text alone, and never in the prior's prompt."""

from __future__ import annotations

import json

import numpy as np

from amc.envs.textcraft.env import TextCraftOptions, TextCraftSuite
from amc.envs.textcraft.recipes import pretty
from amc.envs.textcraft.summary import textcraft_summary
from amc.envs.textcraft.tasks import plan
from amc.priors.prompts import completion_prompt
from amc.types import History, Step
from amc.value.data import history_from_dict


def summary_items(summary: str) -> dict[str, int]:
    inv = summary.split(" | ")[0].removeprefix("inventory: ")
    return {} if inv == "empty" else {
        name: int(k) for k, name in (x.split(" ", 1) for x in inv.split(", "))}


def episode(suite: TextCraftSuite, task: str, rng: np.random.Generator) -> list[tuple]:
    """(history, true inventory) after every step of the plan with random valid detours."""
    env = suite.make()
    h = History(task, env.reset(task))
    out = [(h, dict(env.inventory))]
    actions = plan(suite.book, env.goal)
    while actions and not h.done:
        a = actions.pop(0) if rng.random() < 0.7 else str(rng.choice(env.valid_actions()))
        r = env.step(a)
        h = h.extend(Step(a, a, r.observation, r.reward, r.done))
        out.append((h, dict(env.inventory)))
    return out


def test_summary_inventory_is_the_environments_on_real_episodes() -> None:
    suite = TextCraftSuite(TextCraftOptions())
    rng = np.random.default_rng(0)
    checked = 0
    for task in suite.task_ids("train")[:25]:
        for h, inventory in episode(suite, task, rng):
            s = textcraft_summary(h)
            assert s is not None
            assert summary_items(s) == {pretty(i): k for i, k in inventory.items() if k}, s
            checked += 1
            if h.done and h.total_reward > 0:
                assert s.endswith("in the inventory")
    assert checked > 80


def test_summary_reads_only_the_text_and_names_what_is_missing() -> None:
    suite = TextCraftSuite(TextCraftOptions())
    h, _ = episode(suite, suite.task_ids("train")[3], np.random.default_rng(1))[-2]
    # From the history's serialised text alone (no environment object behind it): the same.
    record = json.loads(json.dumps({"observation0": h.observation0, "steps": [
        {"raw_text": s.raw_text, "action": s.action, "observation": s.observation,
         "reward": s.reward, "done": s.done} for s in h.steps]}))
    assert textcraft_summary(history_from_dict(record, h.task_id)) == textcraft_summary(h)
    obs0 = "Crafting commands:\ncraft 1 stick using 2 oak planks\n\nGoal: craft stick."
    start = History("t", obs0)
    assert textcraft_summary(start) == ("inventory: empty | goal stick: still needs 2 more "
                                        "oak planks (get)")
    got = start.extend(Step("", "get 2 oak planks", "Got 2 oak planks", 0.0, False))
    assert textcraft_summary(got) == ("inventory: 2 oak planks | goal stick: all ingredients "
                                      "held: craft it now")
    assert textcraft_summary(History("t", "no goal here")) is None
    # The prior never sees it: the summary is the value's, not the agent's.
    assert "ingredients held" not in completion_prompt(got, "textcraft")
