"""The plan-67 cell: the round-3 design (H 12, every-step resampling) on fresh 6-7-step tasks
with eight seeds; its tasks and its test pool drawn from tasks no demonstration and no earlier
LLM cell used; its declared test-set rule."""

import json

import pytest

from amc.envs.replay import build_suite
from amc.envs.textcraft.planner import menu_plan
from studies.sft_prior.cells import cell_config
from studies.sft_prior.dagger3 import band as round3
from studies.sft_prior.plan67 import declare, declare_test, run

HELD = json.loads((declare.HERE.parent / "heldout.json").read_text())["tasks"]


def test_the_cell_is_round_three_on_its_fresh_tasks_with_eight_seeds() -> None:
    p = run.protocol()
    got = cell_config(p, 7, run.RUNS / "seed7")
    want = cell_config(round3.cell_protocol(round3.KEPT / "step-000050"), 3, run.RUNS / "seed7")
    assert (got.pop("task_ids"), got.pop("seeds")) == (p["cell"]["tasks"], [7])
    want.pop("task_ids"), want.pop("seeds")
    assert got == want
    assert p["cell"]["seeds"] == list(range(8))


def test_the_tasks_are_fresh_six_or_seven_step_plans_split_from_one_pool() -> None:
    p = run.protocol()
    tasks, reserve = p["cell"]["tasks"], p["test_set_rule"]["reserve"]
    assert len(tasks) == declare.N_VALIDATION and not set(tasks) & set(reserve)
    assert sorted(tasks + reserve, key=int) == declare.fresh_pool()
    suite = build_suite("textcraft", p["cell"]["env_options"])
    never_demonstrated = set(HELD["test-reserve-depth2"]) | set(HELD["test-reserve-depth3"]) | {
        t for d in (2, 3) for t in build_suite(
            "textcraft", {"min_depth": d, "max_depth": d, "n_distractors": 10}).task_ids("test")}
    played = set(HELD["validation-depth2"]) | set(HELD["validation-depth3"])
    llm = json.loads((declare.REPO / "studies/llm_regime/regime_search/protocol.json")
                     .read_text())["collection"]["tasks"]
    played |= {str(t) for ts in llm.values() for t in ts}
    for t in tasks + reserve:
        assert t in never_demonstrated and t not in played, t
        assert len(menu_plan(suite, t)) in declare.PLAN_STEPS, t


def test_the_test_rule_is_the_declared_one() -> None:
    rule, size = declare_test.RULE, run.protocol()["test_set_rule"]["size"]
    assert str(rule.seed_options) in size and f"power 0.8), {rule.min_tasks})" in size
    assert rule.log_glob == "plan67-seed*.log" and "6168" in \
        run.protocol()["test_set_rule"]["tasks_from"]


def test_the_kept_cell_recomputes_and_the_by_task_read_agrees_with_it() -> None:
    from studies.sft_prior.plan67 import analyse, by_task

    r = json.loads((run.EVIDENCE / "result.json").read_text())
    assert r["runs"] == r["declared_runs"] == 15 * 8
    assert analyse.main(["--check"]) == 0
    rows = by_task.rows()
    assert [x[0] for x in rows] == run.protocol()["cell"]["tasks"]
    for i, m in enumerate(run.protocol()["cell"]["arms"]):
        assert sum(float(x[4 + i]) for x in rows) / len(rows) == \
            pytest.approx(r["success"][m], abs=1e-3)
