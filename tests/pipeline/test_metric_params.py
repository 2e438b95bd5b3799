"""Which metric promotion uses by default, and the selection value's settings."""

import json
import math
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from amc.pipeline import evaluate, promote
from amc.pipeline.evaluate import flat_metrics, required_metrics, run_config
from amc.pipeline.params import PipelineParams, load_params
from tests.pipeline.conftest import register_version


def test_promotion_defaults_to_the_deployable_metric_when_a_selection_value_is_set():
    sel = PipelineParams.model_validate({"evaluate": {"selection_value": "challenger"}})
    assert sel.promote.metric == "deployable_reward"
    assert PipelineParams().promote.metric == "oracle_best"  # max weight would use the reward
    chosen = PipelineParams.model_validate({"evaluate": {"selection_value": "challenger"},
                                            "promote": {"metric": "success"}})
    assert chosen.promote.metric == "success"
    with pytest.raises(ValidationError, match=r"needs evaluate\.selection_value"):
        PipelineParams.model_validate({"promote": {"metric": "deployable_reward"}})
    with pytest.raises(ValidationError, match="needs method amc"):
        PipelineParams.model_validate({"evaluate": {"selection_value": "challenger",
                                                    "methods": ["bon"]}})


def test_deployable_metrics_are_required_only_with_a_selection_value():
    assert not any("deployable" in k for k in required_metrics(PipelineParams()))
    sel = PipelineParams.model_validate({"evaluate": {"selection_value": "challenger"}})
    assert "deployable_reward" in required_metrics(sel)


def test_the_selection_value_reaches_the_runner_and_nan_stays_out_of_dvc_metrics():
    p = PipelineParams.model_validate({"evaluate": {"selection_value": "challenger"}})
    plan = {"tasks": ["1"], "seeds": [0], "methods": [{"spec": "bon@2"}],
            "models": {"challenger": {"uri": "models:/m/1"}}}
    cfg = run_config(p, plan)
    assert cfg.selection_value == "challenger" and "challenger" in cfg.values
    ev = {"status": "complete", "n_tasks": 1, "methods": {"bon@2": {
        "success": 1.0, "oracle_best": 1.0, "deployable_reward": float("nan"),
        "max_weight_reward": 1.0}}}
    flat = flat_metrics(ev)
    assert flat["bon@2.oracle_best"] == 1.0 and "bon@2.deployable_reward" not in flat


def test_evaluation_reports_the_deployable_selection_with_paired_intervals(workdir):
    params = yaml.safe_load(Path("params.yaml").read_text())
    params["evaluate"]["selection_value"] = "challenger"
    params["promote"]["metric"] = None
    Path("params.yaml").write_text(yaml.safe_dump(params))
    register_version(workdir, 1.0)  # the exact soft value: selects well, without the reward
    p = load_params("params.yaml")
    assert p.promote.metric == "deployable_reward"
    ev = evaluate.run(p)
    assert ev["status"] == "complete"
    for m in ev["methods"].values():  # measured for every method, Best-of-N included
        assert math.isfinite(m["deployable_reward"])
        assert m["deployable_reward"] <= m["oracle_best"] + 1e-12
    row = ev["paired"]["smc@8+challenger"]
    assert (row["baseline"], row["runs"], row["tasks"]) == ("bon@8", 20, 10)
    assert row["deployable_reward_lo"] <= row["deployable_reward"] <= row["deployable_reward_hi"]
    flat = json.loads((p.evaluate.out_dir / "metrics.json").read_text())  # the detail
    assert "bon@8.deployable_reward" in flat and "bon@8.max_weight_reward" in flat
    headline = json.loads(Path(p.evaluate.metrics_file).read_text())  # the DVC metrics
    assert headline["bon"] == round(ev["methods"]["bon@8"]["deployable_reward"], 3)
    d = promote.run(p)
    assert d["metric"] == "deployable_reward" and d["promote"]
