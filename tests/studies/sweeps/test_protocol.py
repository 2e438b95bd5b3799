"""The declared protocol: its validation size is what the committed evidence gives, and the
choice rule picks the best validation candidate (ties to the earliest listed)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from studies.sweeps.protocol import (
    Candidate,
    Protocol,
    basis,
    choose,
    half_width,
    load_protocol,
    needed_tasks,
    variance_components,
)

ROOT = Path(__file__).resolve().parents[3]
FILE = ROOT / "sweeps" / "protocol-issue30.yaml"


def record(name: str, diffs: list[list[float]]) -> dict:
    """A cell record whose (task, seed) differences are ``diffs`` (tasks x seeds)."""
    rows = [{"task_id": f"t{i}", "seed": s, "bon": {"metrics": {"oracle_best": 0.0}},
             "amc": {"metrics": {"oracle_best": d}}}
            for i, ds in enumerate(diffs) for s, d in enumerate(ds)]
    return {"name": name, "rows": rows}


def test_variance_components_split_between_and_within_tasks():
    v = variance_components(record("c", [[0, 1], [1, 1], [0, 0]]))
    within = np.mean([0.5, 0.0, 0.0])
    assert v.seeds == 2 and v.within == pytest.approx(within)
    assert v.between == pytest.approx(np.var([0.5, 1, 0], ddof=1) - within / 2)
    with pytest.raises(ValueError, match="same"):
        variance_components(record("c", [[0, 1], [1]]))


def test_needed_tasks_is_the_smallest_within_bound():
    v = variance_components(record("c", [[0, 1, 0], [1, 1, 0], [0, 0, 0], [1, 1, 1]]))
    n = needed_tasks(v, 3, 0.1)
    assert half_width(v, n, 3) <= 0.1 < half_width(v, n - 1, 3)
    assert needed_tasks(v, 30, 0.1) < n  # more seeds shrink the within part


def test_declared_validation_size_follows_from_the_committed_cells():
    p = load_protocol(FILE)
    recs = [json.loads(f.read_text()) for f in sorted((ROOT / "evidence/runs").glob("*.json"))]
    pool = [r for r in recs if r["cell"]["depth"] == 2 and r["cell"]["q"] == 0.4
            and r["cell"]["value"] in ("learned", "rollout") and len(r["cell"]["seeds"]) == 6
            and not r["cell"].get("menu_form")]
    assert len(pool) == 56
    rec, v = basis(pool)
    val = p.validation
    assert rec["name"] == val.basis and v.seeds == val.variance.seeds == val.seeds
    assert (round(v.between, 4), round(v.within, 4)) == (val.variance.between,
                                                         val.variance.within)
    assert needed_tasks(v, val.seeds, val.half_width) == val.tasks
    from studies.sweeps.config import CellParams  # the sweep's default validation is this sample
    assert (CellParams().val_tasks, CellParams().val_seed) == (val.tasks, val.sample_seed)


def test_choice_takes_the_best_and_a_tie_goes_to_the_earlier():
    cands = tuple(Candidate(name=n) for n in ("a", "b", "c"))
    p = Protocol(issue=0, validation=load_protocol(FILE).validation, candidates=cands)
    cells = {"a": record("a", [[0.1, 0.1]] * 3), "b": record("b", [[0.3, 0.3]] * 3),
             "c": record("c", [[0.305, 0.305]] * 3)}
    assert choose(p, cells).name == "c"
    tied = p.model_copy(update={"choice": p.choice.model_copy(update={"tie": 0.01})})
    assert choose(tied, cells).name == "b"
    with pytest.raises(ValueError, match="missing for: c"):
        choose(p, {k: cells[k] for k in ("a", "b")})


def test_every_declared_candidate_is_a_valid_setting_of_the_sweep():
    from studies.sweeps.config import CellParams, ValueParams

    p = load_protocol(FILE)
    names = [c.name for c in p.candidates]
    assert len(set(names)) == len(names) >= 2
    for c in p.candidates:  # a typo'd key or value fails here, not in a cell hours later
        ValueParams.model_validate({**ValueParams().model_dump(), **c.value})
        CellParams.model_validate({**CellParams().model_dump(), **c.cell, "split": "validation"})
    for t in p.test:
        assert CellParams.model_validate({**CellParams().model_dump(), **t}).split == "test"


def test_commands_queue_each_validation_candidate_and_the_chosen_tests_with_their_ceiling(
        capsys):
    from studies.sweeps.protocol import commands, main

    p = load_protocol(FILE)
    val = commands(p, "validation")
    assert len(val) == len(p.candidates)
    assert all("-S 'cell.split=validation'" in c and "-S 'cell.value=learned'" in c for c in val)
    assert "-S 'value.loss=bce'" in val[3] and "-S 'value.calibration=platt'" in val[5]
    # the base candidate spells out the code defaults: params.yaml now holds the winner
    assert "-S 'value.loss=mse'" in val[0] and "-S 'value.calibration=none'" in val[0]
    assert "-S 'value.state_rollouts=0'" in val[0] and "-S 'value.smc_states=false'" in val[0]
    test = commands(p, "test", "regression-x8-b0.05")
    assert len(test) == 2 * len(p.test)
    learned, ceiling = test[0], test[1]
    assert "-S 'cell.sharpen=8'" in learned and "sharpen" not in ceiling
    assert "-S 'cell.value=rollout'" in ceiling and "-S 'cell.beta=0.05'" in ceiling
    assert all("-S 'cell.split=test'" in c for c in test)
    # targets named: no other benchmark's value stage runs inside an experiment
    assert all(c.startswith("dvc exp run --queue value cell -S") for c in [*val, learned])
    assert ceiling.startswith("dvc exp run --queue cell -S")
    assert main([str(FILE), "test", "--chosen", "nope"]) == 2
    assert capsys.readouterr().err.startswith("error: ")


def test_the_rendering_protocol_starts_from_the_first_protocol_s_winner_as_it_ran():
    """The second study's reference is the first's winner exactly as its cells ran (same
    validation split, value keys, and sweeps/params.yaml's max_length): a mismatch would make
    its committed validation cell not count, or count a different value."""
    from studies.sweeps.config import load_sweep_params
    from studies.sweeps.protocol import stem

    first, render = load_protocol(FILE), load_protocol(ROOT / "sweeps/protocol-issue30-render.yaml")
    assert render.validation == first.validation and render.choice == first.choice
    winner = next(c for c in first.candidates if c.name == render.candidates[0].name)
    ref = render.candidates[0]
    assert ref.cell == winner.cell
    assert ref.value == {**winner.value, "max_length": load_sweep_params(
        ROOT / "sweeps/params.yaml").value.max_length}
    assert all(c.value.get("show_budget", False) is False for c in render.candidates)
    assert stem(render) == "protocol-issue30-render" and stem(first) == "protocol-issue30"
    # the first protocol's cells ran at the params file's max_length: its candidates' keys say
    # so, so a longer rendering's cell is no first-protocol candidate's (and the reference is)
    from studies.sweeps.protocol import value_overrides

    spelled = value_overrides(first, winner)
    assert spelled["max_length"] == 192 and spelled["history_k"] == 8
    ref_keys = value_overrides(render, ref)
    assert all(ref_keys[k] == v for k, v in spelled.items() if k in ref_keys)
    assert value_overrides(render, render.candidates[1])["max_length"] == 288
