"""Fixtures of the pipeline tests: a toy params file in a temp dir, a temp MLflow store, and a
value function whose quality is read from a registered model version.

``registry-quality`` is a real :class:`~amc.protocols.ValueFunction`: it resolves a
``models:/<name>/<version>`` URI through the MLflow registry, reads ``quality.json`` from the
version's files and scores histories with ``quality * exact soft value`` of the synthetic tree
(quality 1 = the optimal twist, -1 = an adversarial one); ``fail: true`` makes it raise, as a
broken model would. It lets promotion be tested on real evaluations before any training.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest
import yaml

from amc.config import Frozen
from amc.registry import VALUES
from amc.types import History

MODEL = "amc-value-synthetic"

TOY_PARAMS = {
    "env": {"name": "synthetic", "options": {"n_train": 12, "n_test": 10, "depth": 3}},
    "prior": {"name": "synthetic", "options": {}},
    "smc": {"max_steps": 10, "beta": 0.1, "resample": "fixed", "resample_steps": [1, 2],
            "success_threshold": 0.8},
    "collect": {"split": "train", "max_tasks": 12, "rollouts": 4, "seeds": [0]},
    "evaluate": {"split": "test", "max_tasks": 10, "methods": ["bon", "amc"], "n_grid": [8],
                 "seeds": [0, 1], "learned_value": "registry-quality"},
    "promote": {"metric": "max_weight_reward", "level": 0.05},
    "report": {"calibration_states": 40},
}


class QualityOptions(Frozen):
    """Options of the test value."""

    model: str
    """models:/ URI of a version whose files hold quality.json."""
    tracking_uri: str | None = None
    """The store of ``model`` (None: $MLFLOW_TRACKING_URI), as the learned value's option."""


class QualityValue:
    """quality * exact soft value (or a failure), per the registered version's quality.json."""

    def __init__(self, exact: object, quality: float, fail: bool) -> None:
        self.exact, self.quality, self.fail = exact, quality, fail

    async def score(self, histories: Sequence[History]) -> list[float]:
        if self.fail:
            raise RuntimeError("broken value model")
        return [self.quality * x for x in await self.exact.score(histories)]

    async def aclose(self) -> None:
        await self.exact.aclose()


@VALUES.register("registry-quality", options=QualityOptions)
def make_quality_value(options: QualityOptions, *, env_options: object = None,
                       beta: float = 1.0, **_: object) -> QualityValue:
    """Test value whose quality comes from the model registry."""
    import mlflow

    from amc.envs.synthetic import make_exact_value
    from amc.tracking import tracking_uri

    mlflow.set_tracking_uri(tracking_uri(options.tracking_uri))  # LearnedValue's contract
    local = Path(mlflow.artifacts.download_artifacts(artifact_uri=options.model))
    spec = json.loads((local / "quality.json").read_text())
    return QualityValue(make_exact_value(env_options=env_options, beta=beta),
                        float(spec["quality"]), bool(spec.get("fail", False)))


@pytest.fixture(scope="session")
def mlflow_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated MLflow SQLite DB, made once per session and copied per test."""
    from amc.pipeline.lineage import setup

    db = tmp_path_factory.mktemp("mlflow-template") / "mlflow.db"
    old = os.environ.get("MLFLOW_TRACKING_URI")
    setup(f"sqlite:///{db}", "amc-template")
    if old is not None:
        os.environ["MLFLOW_TRACKING_URI"] = old
    return db


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mlflow_template: Path) -> Path:
    """cwd = a temp dir with the toy params.yaml and its own MLflow store under mlruns/."""
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(TOY_PARAMS))
    (tmp_path / "mlruns").mkdir()
    shutil.copy(mlflow_template, tmp_path / "mlruns" / "mlflow.db")
    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path}/mlruns/mlflow.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    import mlflow

    mlflow.set_tracking_uri(uri)  # the process-global URI wins over the environment
    return tmp_path


def register_version(root: Path, quality: float, *, fail: bool = False,
                     alias: str | None = "challenger") -> str:
    """Register a model version carrying ``quality.json``; point ``alias`` at it."""
    import mlflow

    client = mlflow.MlflowClient()
    if not client.search_registered_models(f"name = '{MODEL}'"):
        client.create_registered_model(MODEL)
    n = len(client.search_model_versions(f"name = '{MODEL}'")) + 1
    src = root / "models" / f"v{n}"
    src.mkdir(parents=True)
    (src / "quality.json").write_text(json.dumps({"quality": quality, "fail": fail}))
    v = str(client.create_model_version(MODEL, source=str(src)).version)
    if alias:
        client.set_registered_model_alias(MODEL, alias, v)
    return v


def copy_stage_inputs(root: Path, repo: Path = Path(__file__).resolve().parents[2]) -> None:
    """Copy into a test project the root pipeline's file deps that live outside ``amc/`` and
    are no stage's output (e.g. the declared held-out task lists collect excludes)."""
    spec = yaml.safe_load((repo / "dvc.yaml").read_text())
    outs = {str(o) for st in spec["stages"].values() for o in st.get("outs", [])}
    for st in spec["stages"].values():
        for dep in st.get("deps", []):
            src = repo / str(dep)
            if str(dep).startswith("amc/") or str(dep) in outs or not src.is_file():
                continue
            (root / str(dep)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(src, root / str(dep))
