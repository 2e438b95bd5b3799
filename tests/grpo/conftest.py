"""A toy model folder shared by the GRPO tests (built once per session)."""

from pathlib import Path

import pytest

from tests.grpo.toy import make_toy_model


@pytest.fixture(scope="session")
def toy_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_toy_model(tmp_path_factory.mktemp("toy-model"))
