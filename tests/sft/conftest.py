"""Shared SFT fixtures: the GRPO tests' toy model (a tiny random Gemma-3, digit tokenizer)."""

from pathlib import Path

import pytest

from tests.grpo.toy import make_toy_model


@pytest.fixture(scope="session")
def toy_lm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_toy_model(tmp_path_factory.mktemp("sft-toy-model"))
