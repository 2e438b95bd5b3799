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


def test_git_dirty_ignores_what_the_pipeline_rewrites(tmp_path: Path) -> None:
    import subprocess

    from amc.tracking import dirty_paths, git_commit

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    for f in ("dvc.lock", "metrics/eval.json", "plots/ess.json", "amc/x.py", "params.yaml"):
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f).write_text("v1\n")
    git("init", "-q")
    git("-c", "user.email=t@amc.invalid", "-c", "user.name=t", "add", "-A")
    git("-c", "user.email=t@amc.invalid", "-c", "user.name=t", "commit", "-qm", "c")
    for f in ("dvc.lock", "metrics/eval.json", "plots/ess.json"):  # what `dvc repro` rewrites
        (tmp_path / f).write_text("v2\n")
    assert git_commit(tmp_path)[1] is False
    (tmp_path / "amc/x.py").write_text("v2\n")  # code: the run is not the commit's
    assert git_commit(tmp_path)[1] is True
    assert dirty_paths(" M amc/x.py\n M dvc.lock\nR  a.py -> b.py\n M grpo/metrics.json\n") == \
        ["amc/x.py", "b.py", "grpo/metrics.json"]  # the product names no side project


def test_git_dirty_ignores_what_a_side_dvc_project_declares(tmp_path: Path) -> None:
    """A second DVC project (its own dvc.yaml) adds its lock and declared outputs, read from
    its dvc.yaml, not from a list of this repository's studies."""
    import subprocess

    from amc.tracking import git_commit

    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.email=t@amc.invalid", "-c", "user.name=t", *args],
                       cwd=tmp_path, check=True, capture_output=True)

    (tmp_path / "side/out").mkdir(parents=True)
    (tmp_path / "side/dvc.yaml").write_text(
        "stages:\n  cell:\n    cmd: python cell.py\n    outs:\n      - out/runs.json:\n"
        "          cache: false\n      - models\n    metrics:\n      - m.json:\n"
        "          cache: false\n")
    (tmp_path / "side/models").mkdir()
    files = ("side/dvc.lock", "side/out/runs.json", "side/m.json", "side/models/w.bin",
             "side/cell.py", "side/out/notes.txt")
    for f in files:
        (tmp_path / f).write_text("v1\n")
    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "c")
    for f in files[:4]:  # the lock, two declared files and a file in a declared folder
        (tmp_path / f).write_text("v2\n")
    assert git_commit(tmp_path / "side")[1] is False
    (tmp_path / "side/out/notes.txt").write_text("v2\n")  # beside an out, not declared
    assert git_commit(tmp_path)[1] is True


def test_experiments_get_a_description(tmp_path: Path) -> None:
    import mlflow

    from amc.tracking import EXPERIMENT_NOTES, NOTE

    uri = sqlite_uri(tmp_path / "m.db")
    exp_id = setup_tracking(uri, "amc-evaluate")
    exp = mlflow.MlflowClient(uri).get_experiment(exp_id)
    assert exp.tags[NOTE] == EXPERIMENT_NOTES["amc-evaluate"]
