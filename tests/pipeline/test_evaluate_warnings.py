"""The evaluation record warns of a value constant within its resampling groups."""

from __future__ import annotations

import json
from pathlib import Path

from amc.pipeline import evaluate
from amc.pipeline.params import load_params
from tests.pipeline.conftest import register_version


def test_the_record_warns_of_a_constant_value_and_not_of_an_informative_one(
        workdir: Path) -> None:
    register_version(workdir, 0.0)  # quality 0: the challenger scores every state 0
    p = load_params("params.yaml")
    ev = evaluate.run(p)
    smc = ev["methods"]["smc@8+challenger"]
    assert smc["value_constant_share"] == 1.0 and smc["value_groups"] > 0
    assert len(ev["warnings"]) == 1 and ev["warnings"][0].startswith("smc@8+challenger: ")
    assert ev["methods"]["bon@8"]["warnings"] == []
    on_disk = json.loads(Path("data/eval/evaluation.json").read_text())
    assert on_disk["warnings"] == ev["warnings"]
    assert "\nwarning: smc@8+challenger: " in evaluate.line(ev)

    register_version(workdir, 1.0)  # the exact soft value ranks particles
    ev = evaluate.run(p)
    assert ev["warnings"] == [] and ev["methods"]["smc@8+challenger"]["value_constant_share"] < 0.9
