"""The sweep value's offline figures on its held-out states, beside the rollout ceiling's.

For every held-out, non-terminal state of the value dataset (the value-test tasks, realised
targets) this computes :func:`amc.value.offline.offline_figures` for the learned value (its p
after the fitted calibration: what the cells use before ``sharpen``) and for the Monte-Carlo
ceiling on the same states, so a sweep can relate the figures to the gain (item 2 of issue 30).

Doomed states (TextCraft): the planner's remaining steps from the state's inventory (the
menu-form planner's, simulated, when the data's prior acts in menu form) exceed the steps left
of the budget. The planner's count is the fewest steps *its* recipe choices allow, so a few
such states may still succeed by another recipe; those are counted (``doomed_succeeded``) and
left out of the mask. Other benchmarks (``suite`` None) get no doomed mask: the figures without
``doomed_*``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from amc.envs.textcraft.env import TextCraftSuite
from amc.envs.textcraft.planner import plan_length, textcraft_menu_form, textcraft_next_action
from amc.types import History
from amc.value.offline import offline_figures
from amc.value.targets import Key, keyed


def remaining_steps(suite: TextCraftSuite, h: History, menu_form: bool, limit: int = 200) -> int:
    """The planner's steps from the state ``h`` reaches to the goal."""
    env = suite.make()
    env.reset(h.task_id)
    for a in h.actions:
        env.step(a)
    if env.done:
        return 0
    if not menu_form:
        assert env.goal is not None
        return plan_length(suite.book, env.goal, env.inventory)
    n = 0
    while not env.done and n < limit:
        nxt = textcraft_next_action(env)
        if nxt is None:
            break
        env.step(textcraft_menu_form(env, nxt))
        n += 1
    return n


def is_doomed(suite: TextCraftSuite, h: History, menu_form: bool) -> bool:
    """Whether the planner cannot reach the goal in the budget's steps left."""
    left = h.steps_left
    return left is not None and not h.done and remaining_steps(suite, h, menu_form) > left


def held_out_figures(suite: TextCraftSuite | None, histories: list[History], held: Any,
                     preds: dict[str, dict[Key, float]], menu_form: bool) -> dict[str, Any]:
    """Figures of each prediction set (name -> p by row key) on the held-out rows ``held``."""
    by_key = {(t, g): h for t, g, h in keyed(histories)}
    rows = [(str(r["task_id"]), int(r["traj"]), int(r["step"]), float(r["target"]))
            for r in held if not r["terminal"]]
    keys = [(t, g, s) for t, g, s, _ in rows]
    success = np.array([y >= 0.5 for *_, y in rows], bool)
    groups = [(t, s) for t, _, s in keys]
    out: dict[str, Any] = {}
    mask = None
    if suite is not None:
        doomed = np.array([is_doomed(suite, by_key[(t, g)].prefix(s), menu_form)
                           for t, g, s in keys], bool)
        out["doomed_succeeded"] = float((doomed & success).sum())
        mask = doomed & ~success
    for name, p in preds.items():
        out[name] = offline_figures([p[k] for k in keys], success, groups, mask)
    return out
