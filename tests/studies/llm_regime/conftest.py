"""The study's tests run the pipeline's real stages on the toy params (temp dir, MLflow store,
the registry-quality value), as the pipeline tests do."""

from tests.pipeline.conftest import mlflow_template, workdir  # noqa: F401  (fixtures)
