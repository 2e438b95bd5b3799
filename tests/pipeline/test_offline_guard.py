"""The gate's offline guard (``promote.offline_guard``) on hand-built evaluations and states.

The guard vetoes a challenger whose value is worse than the champion's on the chosen offline
figure by more than ``max_worse`` (in the figure's direction), passes it otherwise, says so
when the figure cannot be computed, and -- off by default -- changes no decision.
"""

from __future__ import annotations

import pytest

from amc.pipeline.calibration import prior_states
from amc.pipeline.guards import doomed_mask, labelled_states, offline_check
from amc.pipeline.params import PipelineParams
from amc.pipeline.promote import decide, evidence_tags, markdown
from amc.pipeline.promote_params import OfflineGuard, PromoteParams
from amc.smc.records import TaskResult, TrajectoryRecord
from amc.types import History, Step, Usage

METRIC = "max_weight_reward"
GAIN = [0.10, 0.45, 0.20, 0.40, 0.15, 0.50, 0.25, 0.35]  # 8 tasks, all better: promoted


def _result(method: str, task: int, seed: int, reward: float) -> TaskResult:
    return TaskResult(task_id=str(task), env="toy", method=method, seed=seed, n_particles=4,
                      config_hash="x", observation0="", steps=(), trajectories=(),
                      metrics={METRIC: reward, "oracle_best": reward}, usage=Usage(), wall_s=0.0)


def _decide(guard: OfflineGuard | None, guards: dict) -> dict:
    p = PipelineParams(promote=PromoteParams(metric=METRIC, offline_guard=guard))
    a, b = "smc@4+challenger", "smc@4+champion"
    results = {f"{a}#{s}": [_result(a, t, s, 0.5 + d) for t, d in enumerate(GAIN)]
               for s in (0, 1)}
    results |= {f"{b}#{s}": [_result(b, t, s, 0.5) for t in range(len(GAIN))] for s in (0, 1)}
    ev = {"status": "complete", "n_grid": [4], "seeds": [0, 1],
          "models": {"name": "m", "challenger": {"version": "2"}, "champion": {"version": "1"}},
          "methods": {a: {METRIC: 0.5}, b: {METRIC: 0.5}}}
    return decide(p, ev, results, {"challenger": "2", "champion": "1"}, guards)


def guards(mine: dict | None, theirs: dict | None, note: str = "") -> dict:
    return {"challenger": {"offline": mine, "offline_note": note},
            "champion": {"offline": theirs, "offline_note": note}}


@pytest.mark.parametrize(("figure", "mine", "theirs", "vetoed"), [
    ("log_loss", 0.50, 0.40, True),     # 0.10 more nats > 0.05
    ("log_loss", 0.44, 0.40, False),    # 0.04 more: within
    ("log_loss", 0.30, 0.40, False),    # better
    ("auc_within", 0.60, 0.70, True),   # higher is better: 0.10 lower AUC
    ("auc_within", 0.80, 0.70, False),
    ("doomed_weight", 0.90, 0.50, True),
    ("small_p_ratio", float("inf"), float("inf"), False),  # equal, even at inf
])
def test_guard_vetoes_a_challenger_worse_by_more_than_max_worse(figure, mine, theirs, vetoed):
    g = OfflineGuard(figure=figure, max_worse=0.05)
    d = _decide(g, guards({figure: mine}, {figure: theirs}))
    assert d["promote"] is not vetoed, d["reason"]
    assert d["offline_guard"]["status"] == ("vetoed" if vetoed else "passed")
    assert d["offline_guard"]["challenger"] == mine and d["offline_guard"]["figure"] == figure
    assert (f"offline {figure}" in d["reason"]) is vetoed
    md = markdown(d)
    assert f"| {figure} |" in md and d["offline_guard"]["status"] in md
    assert evidence_tags(d)["promotion.offline_guard"] == d["offline_guard"]["status"]


def test_off_by_default_changes_no_decision():
    assert PromoteParams().offline_guard is None
    worse = guards({"log_loss": 9.0, "auc_within": 0.1}, {"log_loss": 0.1, "auc_within": 0.9})
    off = _decide(None, worse)
    assert off["promote"] and off["offline_guard"] == {"status": "off"}
    bare = _decide(None, {"challenger": {}, "champion": {}})
    assert {k: v for k, v in off.items() if k != "guards"} == {
        k: v for k, v in bare.items() if k != "guards"}
    assert "offline guard" not in markdown(off).lower().replace("offline guard: off", "")


def test_a_figure_that_cannot_be_computed_is_said_not_silently_passed():
    g = OfflineGuard(figure="doomed_weight", max_worse=0.1)
    why = "toy has no planner for a doomed-state mask"
    d = _decide(g, guards({"log_loss": 0.4}, {"log_loss": 0.4}, why))
    assert not d["promote"] and d["offline_guard"]["status"] == "not computed"
    assert why in d["reason"] and "offline guard (doomed_weight) not computed" in d["reason"]
    noted = _decide(g.model_copy(update={"missing": "note"}), guards({}, {}, why))
    assert noted["promote"] and "(not applied)" in noted["reason"] and why in noted["reason"]
    assert offline_check(g, None, {"doomed_weight": 0.2})["status"] == "not computed"
    assert OfflineGuard(max_worse=0.1).figure == "log_loss"  # the documented default


def _traj(rewards: list[float]) -> TrajectoryRecord:
    steps = tuple(Step(f"Action: a{i}", f"a{i}", f"o{i}", r, i == len(rewards) - 1)
                  for i, r in enumerate(rewards))
    return TrajectoryRecord(pid=0, slot=0, lineage=(), steps=steps, total_reward=sum(rewards),
                            done=True, final_log_weight=0.0)


def test_labelled_states_are_the_calibration_states_with_their_trajectory_success():
    won, lost = _traj([0.0, 0.5, 0.5]), _traj([0.5, 0.0, 0.0, 0.0])
    rs = [TaskResult(task_id=str(t), env="toy", method="bon", seed=0, n_particles=2,
                     config_hash="x", steps=(), trajectories=(won, lost), metrics={},
                     usage=Usage(), wall_s=0.0, budget=6) for t in range(5)]
    results = {"bon@2#0": rs, "smc@2+challenger#0": rs}
    full = labelled_states(results, ["bon@2"], 1000, 0, 1.0)
    assert len(full) == 5 * 7 and [y for _, y in full[:7]] == [True] * 3 + [False] * 4
    some = labelled_states(results, ["bon@2"], 12, 0, 1.0)
    assert [h for h, _ in some] == [h for h, _ in prior_states(results, ["bon@2"], 12, 0)]


@pytest.fixture(scope="module")
def textcraft():
    from amc.envs.textcraft.planner import menu_plan
    from amc.registry import ENVIRONMENTS

    opts = {"max_depth": 2, "min_depth": 2, "reward": "binary"}
    suite = ENVIRONMENTS.build("textcraft", opts)
    task = next(t for t in suite.task_ids("test") if len(menu_plan(suite, t)) >= 4)
    return suite, opts, task, menu_plan(suite, task)


def _walk(suite, task, actions, budget) -> History:
    env = suite.make()
    h = History(task, env.reset(task), budget=budget)
    for a in actions:
        r = env.step(a)
        h = h.extend(Step(f"Action: {a}", a, r.observation, r.reward, r.done))
    return h


def test_doomed_mask_agrees_with_the_sweeps_planner_count(textcraft):
    from studies.sweeps.offline import is_doomed

    suite, opts, task, plan = textcraft
    n = len(plan)
    hs = [_walk(suite, task, [], n), _walk(suite, task, [], n - 1),
          _walk(suite, task, ["inventory"], n), _walk(suite, task, plan[:2], n)]
    mask, note = doomed_mask("textcraft", opts, [(h, False) for h in hs], 1.0)
    assert mask is not None and list(mask) == [False, True, True, False]
    assert list(mask) == [is_doomed(suite, h, True) for h in hs]
    # a state marked doomed that succeeded anyway is left out of the mask, and counted
    mask, note = doomed_mask("textcraft", opts, [(hs[1], True)], 1.0)
    assert not mask[0] and note.startswith("1 marked doomed")
    mask, note = doomed_mask("synthetic", {}, [(hs[0], False)], 1.0)
    assert mask is None and "no planner" in note
