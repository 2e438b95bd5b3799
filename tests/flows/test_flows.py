"""The flows run the library stages under Prefect (one test server per session)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from prefect.client.orchestration import get_client

from amc.pipeline.artifacts import MANIFEST
from amc.pipeline.params import load_params
from flows.collect import collect_flow
from tests.flows.conftest import ROOT


async def artifact(key: str) -> object:
    """The newest artifact under ``key`` (the server's default order is by id: random UUIDs)."""
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey
    from prefect.client.schemas.sorting import ArtifactSort

    async with get_client() as client:
        arts = await client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])),
            sort=ArtifactSort.CREATED_DESC)
    return arts[0] if arts else None


def test_collect_flow_shards_and_merges(workdir: Path) -> None:
    manifest = collect_flow("params.yaml", [], shards=3)
    m = json.loads(Path(manifest).read_text())
    assert m["complete"] and m["records"] == m["tasks"] == 12
    assert not Path("data/trajectories/shards").exists()


def test_collect_flow_in_rounds_tags_the_flow_run(workdir: Path) -> None:
    import mlflow
    import yaml

    from amc.pipeline import rounds

    p = yaml.safe_load(Path("params.yaml").read_text())
    Path("params.yaml").write_text(yaml.safe_dump({**p, "rounds": {"enabled": True}}))
    for r in (0, 1):
        state = collect_flow("params.yaml", [], shards=2, return_state=True)
        manifest = Path(state.result())
        assert manifest == Path(f"data/trajectories/round-{r:04d}") / MANIFEST
        assert json.loads(manifest.read_text())["records"] == 12
        rounds.close_round(load_params(), r)
        (run,) = mlflow.search_runs(experiment_names=["amc-collect"], output_format="list",
                                    filter_string=f"tags.`amc.round` = '{r}'")
        assert run.data.tags["prefect.flow_run_id"] == str(state.state_details.flow_run_id)
        assert run.data.tags["amc.sharded"] == "true"
        merged = (manifest.parent / f"bon@4__seed{1000 * (r + 1)}.jsonl").stat()
        # back-dated to the flow's start: the run spans the shards' work, not just the merge
        assert run.info.start_time / 1000 <= merged.st_mtime
        assert not (manifest.parent / "shards").exists()


@pytest.mark.slow
def test_collect_flow_on_a_local_dask_cluster(workdir: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    if os.environ.get("CI"):  # CI installs the scale extra (scripts/setup.sh): never skip there
        import prefect_dask  # noqa: F401
    else:
        pytest.importorskip("prefect_dask")
    from flows._common import task_runner

    monkeypatch.setenv("PYTHONPATH", f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    p = load_params("params.yaml", ["flows.task_runner=dask", "flows.max_workers=2"])
    runner = task_runner(p)
    assert type(runner).__name__ == "DaskTaskRunner"
    manifest = collect_flow.with_options(task_runner=runner)("params.yaml", [], shards=2)
    m = json.loads(Path(manifest).read_text())
    assert m["complete"] and m["records"] == 12
    assert (Path("data/trajectories") / MANIFEST).is_file()
