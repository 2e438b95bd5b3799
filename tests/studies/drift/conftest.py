"""The drift study's tests use the flows' real Prefect server fixture."""

from tests.flows.conftest import prefect_server  # noqa: F401  (fixture)
