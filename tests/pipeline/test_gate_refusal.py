"""A gate without power decides without a test (``promote.max_mde``): hand-built results.

Each case is a pure :func:`amc.pipeline.promote.decide` on a complete evaluation of a
challenger (v2) and a champion (v1) with given per-task differences of ``max_weight_reward``.
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from amc.pipeline.artifacts import promotion_headline
from amc.pipeline.gate_stats import gate_test, sign_flip_min_tasks, untested_reason
from amc.pipeline.params import PipelineParams
from amc.pipeline.promote import decide, evidence_tags, markdown
from amc.pipeline.promote_params import PromoteParams
from amc.smc.records import TaskResult
from amc.types import Usage

METRIC = "max_weight_reward"


def _result(method: str, task: int, seed: int, reward: float) -> TaskResult:
    return TaskResult(task_id=str(task), env="toy", method=method, seed=seed, n_particles=4,
                      config_hash="x", observation0="", steps=(), trajectories=(),
                      metrics={METRIC: reward, "oracle_best": reward}, usage=Usage(), wall_s=0.0)


def _decide(diffs: list[float], max_mde: float | None, *, champion: bool = True,
            seeds: tuple[int, ...] = (0, 1), guards: dict | None = None,
            champion_drifted: bool = False) -> dict:
    """The decision on tasks whose challenger - champion difference is ``diffs[task]`` (the
    same on every seed; the champion scores 0.5 everywhere)."""
    p = PipelineParams(promote=PromoteParams(metric=METRIC, max_mde=max_mde))
    a, b = "smc@4+challenger", "smc@4+champion"
    results = {f"{a}#{s}": [_result(a, t, s, 0.5 + d) for t, d in enumerate(diffs)]
               for s in seeds}
    results |= {f"{b}#{s}": [_result(b, t, s, 0.5) for t in range(len(diffs))] for s in seeds}
    models = {"name": "m", "challenger": {"version": "2"},
              "champion": {"version": "1"} if champion else None}
    methods = {a: {METRIC: 0.5}, b: {METRIC: 0.5}}
    ev = {"status": "complete", "models": models, "n_grid": [4], "seeds": list(seeds),
          "methods": methods}
    current = {"challenger": "2", "champion": "1" if champion else None}
    return decide(p, ev, results, current, guards or {}, champion_drifted=champion_drifted)


# 8 tasks, all better, sd 0.15: the sign-flip p is 1/256, but the mde is about 0.15
WIDE = [0.10, 0.45, 0.20, 0.40, 0.15, 0.50, 0.25, 0.35]


def test_an_underpowered_gate_is_refused_with_its_reason() -> None:
    today = _decide(WIDE, None)  # the check off: tested and promoted, as before
    assert today["promote"] and today["tested"] and today["powered"] is None
    assert today["p_value"] < 0.05

    d = _decide(WIDE, 0.1)
    assert not d["promote"] and not d["tested"] and d["powered"] is False
    assert d["p_value"] is None and d["lower_bound"] is None  # no test: no level spent
    assert 0.1 < d["mde"] < 0.3 and d["n_tasks"] == 8 and d["n_pairs"] == 16
    assert d["reason"].startswith("decided without a test: under-powered (8 tasks, mde 0.")
    assert "> max_mde 0.1)" in d["reason"] and d["reason"].endswith("keep v1")
    assert d["tasks_needed"] > 8  # sized by max_mde when target_mde is not set
    assert f"{d['tasks_needed']} tasks would detect 0.1 with 80% power" in d["reason"]
    assert promotion_headline(d) == {"promoted": 0}
    tags = evidence_tags({**d, "eval_set": "x", "decided_at": "now"})  # on the model version
    assert tags["promotion.tested"] == "False" and tags["promotion.powered"] == "False"
    assert "| tested | False |" in markdown(d) and "decided without a test" in markdown(d)


def test_a_powered_gate_tests_as_before() -> None:
    d = _decide(WIDE, 0.5)
    today = _decide(WIDE, None)
    assert d["promote"] and d["tested"] and d["powered"] is True
    assert d["reason"] == today["reason"] and d["p_value"] == today["p_value"]
    head = promotion_headline(d)
    assert head["promoted"] == 1 and set(head) == {"promoted", "delta", "p"}
    tie = _decide([0.3, -0.3, 0.2, -0.2, 0.25, -0.25, 0.1, -0.1], 0.5)  # tested, not better
    assert tie["tested"] and not tie["promote"] and "not above" in tie["reason"]


def test_identical_differences_are_refused_sd_0() -> None:
    same = [0.2] * 6  # sign-flip p 1/64: promoted today, but no sd and no mde
    assert _decide(same, None)["promote"]
    d = _decide(same, 0.1)
    assert not d["promote"] and not d["tested"] and d["tasks_needed"] is None
    assert "decided without a test: every task's difference is +0.2000" in d["reason"]
    assert "(6 tasks, sd 0)" in d["reason"]
    # the main job's case: 3 tasks, 1 seed, no difference at all
    main = _decide([0.0] * 3, 0.1, seeds=(0,))
    assert not main["tested"] and "(3 tasks, sd 0)" in main["reason"] and main["n_pairs"] == 3


def test_too_few_tasks_for_the_level_or_for_an_sd() -> None:
    # 3 tasks with a tiny sd: the mde is small, but the sign-flip p is never below 1/8
    d = _decide([0.20, 0.21, 0.19], 0.1)
    assert d["mde"] < 0.1 and not d["tested"]
    # (the first decision on a frozen set runs at level / 2: amc.pipeline.gate_stats)
    assert "at least 2^-3 = 0.125, not below the level 0.025" in d["reason"]
    assert d["tasks_needed"] == sign_flip_min_tasks(0.025) == 6  # what the level needs
    assert "6 tasks would detect 0.1" in d["reason"]
    one = _decide([0.3], 0.1)
    assert not one["tested"] and "1 task(s) give no per-task sd" in one["reason"]


def test_the_first_decision_and_a_drifted_champion() -> None:
    first = _decide(WIDE, 0.1, champion=False)  # no champion: registered as before
    assert first["promote"] and first["reason"] == "no champion yet"
    assert first["tested"] is False and first["powered"] is None
    guards = {"challenger": {"calibration_mae": 0.1}, "champion": {"calibration_mae": 0.3}}
    p = _decide([0.0, 0.01, -0.01, 0.0], 0.1, champion_drifted=True, guards=guards)
    assert not p["promote"] and p["reason"].startswith("decided without a test")


def test_untested_reason_and_the_param() -> None:
    t = gate_test(WIDE, min_effect=0.0, level=0.05)
    assert untested_reason(t, max_mde=None) is None
    assert untested_reason(t, max_mde=t.mde) is None  # at the bound: powered
    assert untested_reason(t, max_mde=t.mde * 0.99) is not None
    with pytest.raises(ValueError, match="max_mde"):
        untested_reason(t, max_mde=0.0)
    assert [sign_flip_min_tasks(x) for x in (0.05, 0.0625, 0.025, 0.05 / 6)] == [5, 5, 6, 7]
    with pytest.raises(ValidationError):
        PromoteParams(max_mde=-0.1)
