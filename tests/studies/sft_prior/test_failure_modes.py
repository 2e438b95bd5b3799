"""The failure-mode shares: the planner's own rollout agrees with itself; a loop is counted."""

from amc.envs.textcraft.env import TextCraftOptions, TextCraftSuite
from amc.priors.planner_mix import load_planner
from amc.types import History, Step
from studies.sft_prior import failure_modes as fm


def rollout(task: str, actions: list[str] | None) -> History:
    """``actions`` played on task (None: the planner's own actions, in the menu's form)."""
    env = TextCraftSuite(TextCraftOptions(min_depth=2, max_depth=2, n_distractors=10)).make()
    hooks = load_planner("textcraft")
    obs0 = env.reset(task)
    obs0 = getattr(obs0, "observation", obs0)
    steps = []
    for i in range(12 if actions is None else len(actions)):
        a = hooks.next_action(env) if actions is None else actions[i]
        if a is None:
            break
        if actions is None and hooks.to_menu is not None:
            a = hooks.to_menu(env, a)
        out = env.step(a)
        steps.append(Step(raw_text=a, action=a, observation=str(out.observation),
                          reward=float(out.reward), done=bool(out.done)))
        if out.done:
            break
    return History(task_id=task, observation0=str(obs0), steps=tuple(steps))


def test_the_planners_rollout_agrees_and_a_loop_repeats() -> None:
    good = rollout("146", None)
    assert good.t > 1 and fm.planner_agreement([good], 2) == 1.0
    loop = rollout("146", ["get 1 acacia log"] * 4)
    m = fm.cell_modes([good, loop], 2)
    assert m["rollouts"] == 2 and m["success"] == 0.5 and m["never_craft"] == 0.5
    assert fm.cell_modes([loop], 2)["repeat_previous"] == 1.0
    assert fm.cell_modes([loop], 2)["get_again"] == 0.75  # the first get is new
    assert fm.cell_modes([good], 2)["repeat_previous"] < m["repeat_previous"] < 1.0
    assert fm.got("get 4 acacia log") == "acacia log" and fm.got("craft 1 x using 1 y") is None
