"""The constant-value warning: the share of value groups scored constant, and the run summary
that carries it (a value constant within its groups warns, an informative one does not)."""

import json

import pytest
from typer.testing import CliRunner

from amc.cli import app
from amc.registry import VALUES
from amc.smc.records import StepInfo, TaskResult
from amc.smc.value_spread import (
    ValueSpread,
    constant_value_warning,
    is_constant,
    value_spread,
)
from amc.types import Usage


def _step(t, values):
    n = len(values)
    return StepInfo(t=t, ess=float(n), resampled=True, ancestors=list(range(n)),
                    log_weights=[0.0] * n, values=values, log_z_increment=0.0, n_live=n)


def _result(*steps):
    return TaskResult(task_id="a", env="toy", method="smc@4", seed=0, n_particles=4,
                      config_hash="h", steps=steps, trajectories=(), metrics={},
                      usage=Usage(), wall_s=0.0)


def test_groups_are_evaluated_steps_with_two_scored_particles():
    r = _result(_step(1, [None] * 4),                      # value not evaluated: no group
                _step(2, [1.0, 1.0, 1.0, 1.0]),            # constant
                _step(3, [0.2, 0.7, None, 0.2]),           # ranks the live ones
                _step(4, [0.5, None, None, None]),         # one live particle: compares nothing
                _step(5, [0.3, 0.3 + 1e-12, None, 0.3]))  # equal within the tolerance
    assert value_spread([r, r]) == ValueSpread(groups=6, constant=4)
    assert value_spread([r]).share == pytest.approx(2 / 3)
    assert value_spread([_result(_step(1, [None, None]))]).share is None  # Best-of-N


def test_is_constant_is_relative_to_the_scores_size():
    assert is_constant([1e6, 1e6 + 1e-4]) and not is_constant([0.0, 1e-6])
    assert not is_constant([1.0, 0.999])


def test_the_warning_needs_the_threshold_share():
    assert constant_value_warning("smc@4", ValueSpread(10, 8)) is None
    w = constant_value_warning("smc@4", ValueSpread(10, 9))
    assert w is not None and w.startswith("smc@4:") and "9 of 10 groups (90%)" in w
    assert constant_value_warning("bon@4", ValueSpread(0, 0)) is None
    assert constant_value_warning("smc@4", ValueSpread(10, 5), threshold=0.5) is not None


ARGS = ["run", "--env", "synthetic", "-m", "smc,bon", "-n", "6", "--steps", "3",
        "--beta", "0.5", "--resample-steps", "1,2", "--max-tasks", "4", "--quiet"]


class HalfValue:
    """A value that should rank states but scores every one 0.5 (a broken zero-shot value)."""

    async def score(self, histories):
        return [0.5] * len(histories)

    async def aclose(self):
        pass


if "test-half" not in VALUES.names():
    VALUES.register("test-half")(lambda **_: HalfValue())


@pytest.mark.parametrize("value,warns", [("test-half", True), ("exact", False)])
def test_a_run_summary_warns_of_a_constant_value_only(tmp_path, value, warns):
    r = CliRunner().invoke(app, [*ARGS, "--value", value, "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    rows = {row["method"]: row for row in
            json.loads((tmp_path / "summary.json").read_text())["methods"]}
    smc, bon = rows["smc"], rows["bon"]
    assert 0 < smc["value_groups"] <= 4 * 2 and bon["value_groups"] == 0  # tasks x resamplings
    assert bon["warnings"] == [] and bon["value_constant_share"] is None
    assert (smc["value_constant_share"] == 1.0) is warns
    assert bool(smc["warnings"]) is warns
    assert ("warning: smc: its value gave every particle" in r.output) is warns


def test_no_value_by_design_is_not_warned_about(tmp_path):
    """SMC with ``none`` (f = 0, the pipeline's zero-shot default) ranks nothing on purpose:
    its scores are not recorded as a value's, so nothing warns (issue 63)."""
    r = CliRunner().invoke(app, [*ARGS, "--value", "none", "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    smc = next(row for row in json.loads((tmp_path / "summary.json").read_text())["methods"]
               if row["method"] == "smc")
    assert smc["value_groups"] == 0 and smc["warnings"] == [] and "warning" not in r.output
