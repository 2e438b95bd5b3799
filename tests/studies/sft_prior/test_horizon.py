"""The horizon-16 cell: the round-3 plan-band design with only the horizon (and the
every-step schedule that follows it) changed; its declared test-set rule."""

import pytest

from studies.sft_prior.cells import cell_config
from studies.sft_prior.dagger3 import band as round3
from studies.sft_prior.horizon import declare_test, run


def test_the_cell_is_round_three_with_horizon_16_and_every_step_resampling() -> None:
    got = cell_config(run.protocol(), 3, run.RUNS / "seed3")
    want = cell_config(round3.cell_protocol(round3.KEPT / "step-000050"), 3,
                       run.RUNS / "seed3")
    assert (got["smc"].pop("max_steps"), want["smc"].pop("max_steps")) == (16, 12)
    assert got["smc"].pop("resample_steps") == list(range(1, 16))
    want["smc"].pop("resample_steps")
    assert got == want
    assert run.protocol()["test_set_rule"]["reserve"] == \
        round3.cell_protocol(round3.KEPT)["test_set_rule"]["reserve"]
    with pytest.raises(ValueError, match="not declared"):
        cell_config(run.protocol(), 4, run.RUNS / "seed4")


def test_the_rule_is_the_declared_one() -> None:
    rule = declare_test.RULE
    assert (rule.seed_options, rule.min_tasks, rule.permutation_seed) == ((4, 8, 12, 16), 20,
                                                                          6161)
    assert "S in 4, 8, 12, 16" in run.protocol()["test_set_rule"]["size"]


def test_the_kept_cell_recomputes_exactly_on_all_declared_runs() -> None:
    import json

    from studies.sft_prior.horizon import analyse

    r = json.loads((run.EVIDENCE / "result.json").read_text())
    assert r["runs"] == r["declared_runs"] == 24 * 4
    assert set(r["sizing_exploratory"]["tasks_needed"]) == {"4", "8", "12", "16"}
    assert analyse.main(["--check"]) == 0
