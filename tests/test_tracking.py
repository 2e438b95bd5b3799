"""MLflow setup: SQLite store in a chosen directory, artifacts beside it, run tags."""

from __future__ import annotations

from pathlib import Path

from amc.tracking import flatten_params, run_tags, setup_tracking, sqlite_uri, tracking_uri


def test_setup_tracking_creates_store_and_experiment_once(tmp_path: Path) -> None:
    import mlflow

    uri = sqlite_uri(tmp_path / "store" / "mlflow.db")
    exp_id = setup_tracking(uri, "exp-a")
    assert setup_tracking(uri, "exp-a") == exp_id  # get, not create twice
    exp = mlflow.MlflowClient(uri).get_experiment(exp_id)
    assert exp.artifact_location == (tmp_path / "store" / "artifacts").resolve().as_uri()
    with mlflow.start_run(tags=run_tags({"dataset_hash": "abc"})) as run:
        mlflow.log_text("hi", "note.txt")
    assert (tmp_path / "store" / "artifacts" / run.info.run_id / "artifacts" / "note.txt").is_file()
    tags = mlflow.MlflowClient(uri).get_run(run.info.run_id).data.tags
    assert tags["dataset_hash"] == "abc" and len(tags["git_commit"]) == 40


def test_uri_precedence_and_params(monkeypatch) -> None:
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert tracking_uri() == "sqlite:///mlruns/mlflow.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "sqlite:///x.db")
    assert tracking_uri() == "sqlite:///x.db" and tracking_uri("sqlite:///y.db") == "sqlite:///y.db"
    assert flatten_params({"a": {"b": 1, "c": {"d": [1, 2]}}, "e": None}) == {
        "a.b": "1", "a.c.d": "[1, 2]", "e": "None"}
