"""Run summaries: metrics over tasks (seeds averaged first) and the selection value's config."""

import math

import pytest

from amc.config import RunConfig, ValueConfig
from amc.reports.table import format_table
from amc.run_hash import _method_run_config, selection_config
from amc.runner import METRICS, summarise
from amc.smc.methods import parse_method
from amc.smc.records import TaskResult
from amc.types import Usage


def _res(task, seed, x):
    m = {k: x for k in METRICS} | {"log_z": 0.0}
    return TaskResult(task_id=task, env="toy", method="bon@4", seed=seed, n_particles=4,
                      config_hash="h", steps=(), trajectories=(), metrics=m, usage=Usage(),
                      wall_s=0.0)


def test_summary_se_is_over_tasks_with_seeds_averaged_first():
    # task a solved on both seeds, task b on one of two, task c on none: task means 1, .5, 0
    rs = {"bon@4#0": [_res("a", 0, 1.0), _res("b", 0, 1.0), _res("c", 0, 0.0)],
          "bon@4#1": [_res("a", 1, 1.0), _res("b", 1, 0.0), _res("c", 1, 0.0)]}
    row = summarise(rs)[0]
    assert (row["tasks"], row["runs"]) == (3, 6)
    assert row["success"] == pytest.approx(0.5)
    assert row["success_se"] == pytest.approx(0.5 / math.sqrt(3))  # sd(1, .5, 0) / sqrt(3)
    # over the six (task, seed) rows it would be sd(1,1,1,0,0,0)/sqrt(6) = 0.2236
    assert "deployable" in format_table([row])


def test_old_records_without_deployable_summarise_as_nan():
    old = TaskResult.from_dict({**_res("a", 0, 1.0).to_dict(), "metrics": {
        "oracle_best": 1.0, "selected_reward": 1.0, "weighted_mean_reward": 1.0, "success": 1.0,
        "log_z": 0.0}})
    row = summarise({"bon@4#0": [old]})[0]
    assert row["max_weight_reward"] == 1.0 and math.isnan(row["deployable_reward"])
    assert "1.000  " in format_table([row]) and "n/a" in format_table([row])  # one task: no s.e.


def test_selection_value_resolves_like_a_method_value_and_enters_the_results_hash():
    learned = ValueConfig(name="learned", options={"model": "models:/m/3"})
    cfg = RunConfig(values={"challenger": learned}, selection_value="challenger")
    assert selection_config(cfg) == learned
    assert selection_config(RunConfig()) is None
    with pytest.raises(ValueError, match="not a configured value"):
        selection_config(RunConfig(selection_value="nope"))
    m = parse_method("bon@4", cfg.smc, cfg.value, {})
    plain = RunConfig(values={"challenger": learned})
    assert "selection" not in _method_run_config(plain, m)  # older results keep their hash
    assert _method_run_config(cfg, m)["selection"]["options"] == {"model": "models:/m/3"}
    assert cfg.out_dir != plain.out_dir


def test_a_value_models_store_does_not_enter_the_results_hash_but_its_version_does():
    """Naming the MLflow store (the pipeline's mlflow_uri as the learned value's tracking_uri)
    keeps the hash of results written with the store in the environment; another version,
    or another selection value, is another hash."""
    from amc.config import config_hash

    def run_hash(**options) -> str:
        v = ValueConfig(name="learned", options=options)
        cfg = RunConfig(values={"challenger": v}, selection_value="challenger")
        m = parse_method("smc@4+challenger", cfg.smc, cfg.value, cfg.values)
        return config_hash(_method_run_config(cfg, m))

    kept = run_hash(model="models:/m/3")
    assert run_hash(model="models:/m/3", tracking_uri="sqlite:///own/mlflow.db") == kept
    assert run_hash(model="models:/m/4", tracking_uri="sqlite:///own/mlflow.db") != kept
    assert run_hash(model="models:/m/3", batch_size=8) != kept  # only the store is left out


def test_a_narrow_table_hides_empty_columns_then_diagnostics_and_says_so():
    rs = {"bon@4#0": [_res("a", 0, 1.0), _res("b", 0, 0.0)]}
    row = summarise(rs)[0]
    full = format_table([row])
    assert full == format_table([row], width=len(full.splitlines()[0]))  # fits: unchanged
    narrow = format_table([row], width=100).splitlines()
    assert all(len(line) <= 100 for line in narrow), narrow
    # zero in every row says nothing (failed, tokens, cost), then the first diagnostic
    assert narrow[-1] == ("(hidden at 100 columns: failed, tokens/task, $/task, weighted mean; "
                          "all in summary.json)")
    assert narrow[0].split() == ["method", "tasks", "oracle", "best", "deployable", "max",
                                 "weight", "(uses", "R)", "success", "success", "deployable"]
    assert "max weight" not in format_table([row], width=80).splitlines()[0]
    failing = {**row, "failed": 2}
    assert "failed" in format_table([failing], width=100).splitlines()[0]  # never hidden then
