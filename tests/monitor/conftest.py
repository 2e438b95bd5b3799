"""The pipeline tests' fixtures (a work directory with a template MLflow store), shared."""

from tests.pipeline.conftest import mlflow_template, workdir  # noqa: F401
