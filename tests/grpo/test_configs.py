"""The shipped `amc grpo --config` files validate (they live in configs/grpo/, apart from the
run configs that tests/smc/test_sampler_behaviour.py loads as `amc run` configs)."""

from pathlib import Path

from amc.config import load_yaml, validate
from amc.grpo.config import GRPOOptions

ROOT = Path(__file__).resolve().parents[2]


def test_shipped_grpo_configs_validate():
    paths = sorted((ROOT / "configs" / "grpo").glob("*.yaml"))
    assert paths, "configs/grpo/ has no config"
    for path in paths:
        opts = validate(GRPOOptions, load_yaml(path), str(path))
        assert isinstance(opts, GRPOOptions)
