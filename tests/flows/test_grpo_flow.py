"""Flow ``amc-grpo`` at toy size on the session's Prefect server: the same four steps as the
DVC stage, run as tasks, with the policy registered in a real MLflow sqlite store."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import yaml

from tests.grpo.test_grpo_stage import toy_section
from tests.grpo.toy import make_toy_model

pytestmark = pytest.mark.slow  # torch, peft, mlflow and two evaluations: minutes on 2 cores


def _task_names(flow_run_id: object) -> set[str]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    async def names() -> set[str]:
        async with get_client() as client:
            runs = await client.read_task_runs(flow_run_filter=FlowRunFilter(
                id=FlowRunFilterId(any_=[flow_run_id])))
        return {r.name.rsplit("-", 1)[0] for r in runs if r.state and r.state.is_completed()}
    return asyncio.run(names())


def test_grpo_flow_trains_evaluates_and_compares(tmp_path: Path) -> None:
    import mlflow

    from flows.grpo import grpo_flow

    toy = make_toy_model(tmp_path / "toy")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    section = {**toy_section(toy, uri), "out_dir": str(tmp_path / "grpo"),
               "metrics_file": str(tmp_path / "grpo.json")}
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"grpo": {**section, "enabled": False}}))
    assert grpo_flow(str(params)) == {"enabled": False}
    assert not (tmp_path / "grpo" / "policy").exists()

    params.write_text(yaml.safe_dump({"grpo": section}))
    state = grpo_flow(str(params), return_state=True)
    res = state.result()
    assert set(res["methods"]) == {"frozen/react", "frozen/bon@2", "frozen/smc@2",
                                   "grpo/react", "grpo/bon@2"}
    assert res == json.loads((tmp_path / "grpo.json").read_text())
    assert {"grpo-train", "grpo-evaluate", "grpo-compare"} <= _task_names(state.state_details
                                                                          .flow_run_id)
    policy = json.loads((tmp_path / "grpo" / "policy-eval" / "summary.json").read_text())
    assert policy["config"]["prior"]["options"]["adapter"].endswith("policy/adapter")
    v = mlflow.MlflowClient(uri).get_model_version("amc-policy-textcraft", "1")
    assert Path(v.source).name == "adapter"
