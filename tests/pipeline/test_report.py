"""Paired differences between methods that share (task, seed) runs."""

import math

import numpy as np
import pytest

from amc.pipeline.report import paired_differences
from amc.smc.records import TaskResult
from amc.types import Usage


def _result(method, task, seed, success):
    m = {"max_weight_reward": success, "oracle_best": success, "success": success}
    return TaskResult(task_id=str(task), env="toy", method=method, seed=seed, n_particles=4,
                      config_hash="x", observation0="", steps=[], trajectories=[], metrics=m,
                      usage=Usage(), wall_s=0.0)


def test_paired_differences_match_runs_by_task_and_seed():
    ev = {"methods": {"bon@4": {"role": "bon", "n": 4}, "smc@4+c": {"role": "amc", "n": 4},
                      "smc@8+c": {"role": "amc", "n": 8}, "react": {"role": "react", "n": 1}}}
    bon = [_result("bon@4", t, 0, float(t < 3)) for t in range(6)]
    amc = [_result("smc@4+c", t, 0, float(t < 4)) for t in reversed(range(6))]  # other order
    out = paired_differences(ev, {"bon@4#0": bon, "smc@4+c#0": amc})
    row = out["smc@4+c"]
    assert row["baseline"] == "bon@4" and row["runs"] == 6
    assert row["success"] == pytest.approx(1 / 6)  # only task 3 differs
    assert row["success_se"] == pytest.approx(np.std([0, 0, 0, 1, 0, 0], ddof=1) / math.sqrt(6))
    half = 2.5705818366147395 * row["success_se"]  # t_{0.975, 5}: one seed, six tasks
    assert (row["success_lo"], row["success_hi"]) == (pytest.approx(1 / 6 - half),
                                                      pytest.approx(1 / 6 + half))
    assert row["deployable_reward"] is None and row["tasks"] == 6  # not measured: no number
    assert set(out) == {"smc@4+c"}  # no Best-of-8 to pair smc@8 with; react is a baseline


def test_report_loads_the_challenger_from_the_params_store_not_the_default(workdir, monkeypatch):
    """A params file with its own MLflow store (configs/llm-regime), run where
    $MLFLOW_TRACKING_URI names another store (which lacks the version): evaluate scores with
    the challenger and `amc report` calibrates it from the params' store, where the train stage
    registered it and the plan resolved it."""
    import shutil
    from pathlib import Path

    import mlflow
    import yaml

    from amc.pipeline import evaluate, report
    from amc.pipeline.params import load_params
    from tests.pipeline.conftest import register_version

    own = workdir / "own" / "mlflow.db"
    own.parent.mkdir()
    shutil.copy(workdir / "mlruns" / "mlflow.db", own)
    params = yaml.safe_load(Path("params.yaml").read_text())
    params["mlflow_uri"] = "sqlite:///own/mlflow.db"  # relative, as in configs/llm-regime
    Path("params.yaml").write_text(yaml.safe_dump(params))
    mlflow.set_tracking_uri(f"sqlite:///{own}")
    register_version(workdir, 1.0)
    p = load_params("params.yaml")
    default = f"sqlite:///{workdir}/mlruns/mlflow.db"  # copied before the version: lacks it
    monkeypatch.setenv("MLFLOW_TRACKING_URI", default)
    mlflow.set_tracking_uri(default)
    assert evaluate.run(p)["status"] == "complete"
    mlflow.set_tracking_uri(default)  # a new process
    s = report.run(p)
    assert s["calibration"]["value"] == "registry-quality"
    assert s["calibration"]["states"] > 0 and s["calibration"]["pearson"] > 0.2


def test_plot_points_absorb_float_noise_of_the_weights_but_keep_what_a_reader_sees():
    from amc.pipeline.report import plot_points

    # two runs' calibration points differed in the 8th significant digit (BLAS order)
    a = plot_points([{"predicted": 0.13712957253058752, "count": 6, "method": "bon@4"}])
    b = plot_points([{"predicted": 0.13712953527768454, "count": 6, "method": "bon@4"}])
    assert a == b and a[0]["count"] == 6 and a[0]["method"] == "bon@4"
    assert plot_points([{"x": 0.1371}]) != plot_points([{"x": 0.1372}])
    assert plot_points([{"x": 1234.5678}]) == [{"x": 1234.57}]
