"""Which methods the evaluate stage runs: the N grid and the zero-shot smc subset."""

import pytest
from pydantic import ValidationError

from amc.pipeline.evaluate import method_specs
from amc.pipeline.params import EvaluateParams, PipelineParams


def specs(**evaluate) -> list[str]:
    p = PipelineParams(evaluate=EvaluateParams(**evaluate))
    return [s for s, _, _ in method_specs(p, with_champion=False)]


def test_every_method_at_every_n_by_default():
    assert specs(n_grid=[4, 8]) == ["react", "bon@4", "smc@4", "smc@4+challenger",
                                    "bon@8", "smc@8", "smc@8+challenger"]


def test_smc_n_grid_restricts_only_the_plain_smc_method():
    got = specs(n_grid=[4, 8, 15], smc_n_grid=[15])
    assert [s for s in got if s.startswith("smc@") and "+" not in s] == ["smc@15"]
    assert {"bon@4", "bon@8", "bon@15", "smc@4+challenger", "smc@15+challenger"} <= set(got)


def test_smc_n_outside_the_grid_is_a_clear_error():
    with pytest.raises(ValidationError, match=r"smc_n_grid \[16\] not in evaluate.n_grid"):
        EvaluateParams(n_grid=[4, 8], smc_n_grid=[16])
