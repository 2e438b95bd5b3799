"""The sweep's typed params: no side channel from the task's optimal plan to the value.

What must hold: the committed ``sweeps/params.yaml`` has planner-mix act in the menu's form and
shows the value no budget derived from the plan; a value that would be shown a plan-length
budget is refused; with the defaults, two states that differ only in their task's budget render
to the same text (the value cannot read the optimal plan's length off it), while a fixed budget
may be shown.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from amc.types import History, Step, Usage
from amc.value.render import render
from studies.sweeps.config import CellParams, ValueParams, load_sweep_params
from studies.sweeps.value import dataset_options

ROOT = Path(__file__).resolve().parents[3]


def test_committed_sweep_params_close_the_side_channels():
    p = load_sweep_params(ROOT / "sweeps" / "params.yaml")
    assert p.cell.menu_form and p.value.menu_form
    assert not p.value.show_budget or p.value.fixed_budget is not None
    assert CellParams().menu_form and not ValueParams().show_budget


def test_a_plan_length_budget_is_never_shown_to_the_value():
    with pytest.raises(ValueError, match="fixed_budget"):
        ValueParams(show_budget=True)
    assert ValueParams(show_budget=True, fixed_budget=12).show_budget


def history(budget: int) -> History:
    obs0 = "Crafting commands:\ncraft 4 stick using 2 oak planks\n\nGoal: craft stick."
    step = Step("Action: get 2 oak planks", "get 2 oak planks", "Got 2 oak planks", 0.0, False,
                Usage(calls=1), {})
    return History("7", obs0, (step,), budget=budget)


def test_default_rendering_does_not_depend_on_the_tasks_budget():
    opts = dataset_options(ValueParams(max_length=4096)).render.model_copy(
        update={"max_tokens": None})
    assert render(history(4), opts) == render(history(9), opts)  # plan 3 vs 8, same state
    shown = opts.model_copy(update={"show_budget": True})
    assert "[STEPS LEFT] 8 of 9" in render(history(9), shown)


def test_every_typed_param_is_in_the_committed_params_file():
    """`dvc exp run -S value.calibration=isotonic` needs the key in params.yaml (Hydra refuses a
    key that is not in the file): the protocol's candidates set these."""
    import yaml

    raw = yaml.safe_load((ROOT / "sweeps" / "params.yaml").read_text())
    for section, model in (("value", ValueParams), ("cell", CellParams)):
        missing = set(model.model_fields) - set(raw[section])
        assert not missing - {"tracking_uri"}, f"{section}: {sorted(missing)} not in params.yaml"
