"""The plan-band cell: its tasks and its test reserve are exactly the declared band (menu-form
plans of 6-10 steps) of the validation and test-reserve sets, never overlapping; its run is the
declared one."""

import json
from pathlib import Path

from amc.config import RunConfig, validate
from amc.envs.replay import build_suite
from amc.envs.textcraft.planner import menu_plan
from studies.sft_prior.band.run import config, protocol

HELDOUT = Path(__file__).resolve().parents[3] / "studies/sft_prior/heldout.json"


def test_tasks_and_reserve_are_the_band_of_their_sets() -> None:
    p, held = protocol(), json.loads(HELDOUT.read_text())["tasks"]
    suite = build_suite("textcraft", p["cell"]["env_options"])

    def band(*keys: str) -> list[str]:
        return [t for k in keys for t in held[k] if 6 <= len(menu_plan(suite, t)) <= 10]

    assert p["cell"]["tasks"] == band("validation-depth2", "validation-depth3")
    reserve = p["test_set_rule"]["reserve"]
    assert reserve == band("test-reserve-depth2", "test-reserve-depth3")
    assert not set(reserve) & set(p["cell"]["tasks"])


def test_the_run_is_the_declared_cell() -> None:
    run = validate(RunConfig, config(1), "band")
    assert run.smc.max_steps == 12 and list(run.smc.resample_steps) == list(range(1, 12))
    assert run.env.options["max_depth"] == 3 and run.methods == ("smc@4+progress", "bon@4")
