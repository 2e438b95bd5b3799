"""Doomed TextCraft states by the planner's count, and the figures over held-out rows."""

from __future__ import annotations

import numpy as np
import pytest

from amc.envs.textcraft.planner import menu_plan
from amc.types import History, Step, Usage
from studies.sweeps.config import CellParams
from studies.sweeps.offline import held_out_figures, is_doomed, remaining_steps
from studies.sweeps.tasks import make_suite


@pytest.fixture(scope="module")
def suite():
    return make_suite(CellParams())


def walk(suite, task, actions, budget):
    env = suite.make()
    h = History(task, env.reset(task), budget=budget)
    for a in actions:
        r = env.step(a)
        h = h.extend(Step(f"Action: {a}", a, r.observation, r.reward, r.done, Usage(calls=1),
                          r.info))
    return h


def test_a_state_is_doomed_when_the_planner_needs_more_steps_than_are_left(suite):
    task = next(t for t in suite.task_ids("test") if len(menu_plan(suite, t)) >= 4)
    plan = menu_plan(suite, task)
    n = len(plan)
    assert remaining_steps(suite, walk(suite, task, [], n), True) == n
    assert not is_doomed(suite, walk(suite, task, [], n), True)
    assert is_doomed(suite, walk(suite, task, [], n - 1), True)
    assert is_doomed(suite, walk(suite, task, ["inventory"], n), True)  # one step wasted
    assert not is_doomed(suite, walk(suite, task, plan[:2], n), True)  # on the plan


def test_held_out_figures_score_both_prediction_sets_on_the_same_rows(suite):
    task = suite.task_ids("test")[0]
    plan = menu_plan(suite, task)
    good = walk(suite, task, plan, len(plan))
    bad = walk(suite, task, ["inventory"] * 2, len(plan))
    hs = [good, bad]
    held = [{"task_id": task, "traj": g, "step": s, "terminal": s == h.t and h.done,
             "target": float(sum(x.reward for x in h.steps[s:]))}
            for g, h in enumerate(hs) for s in range(h.t + 1)]
    ceiling = {(task, g, s): (1.0 if g == 0 else 0.0) for g, h in enumerate(hs)
               for s in range(h.t + 1)}
    soft = {k: (0.6 if k[1] == 0 else 0.2) for k in ceiling}
    out = held_out_figures(suite, hs, held, {"ceiling": ceiling, "soft": soft}, True)
    assert out["ceiling"]["doomed_mean"] == 0.0 and out["soft"]["doomed_mean"] == 0.2
    assert out["ceiling"]["doomed_states"] >= 1 and out["doomed_succeeded"] == 0
    assert out["soft"]["doomed_weight"] == pytest.approx(0.2 / 0.6)
    assert np.isclose(out["ceiling"]["auc_within"], 1.0)
