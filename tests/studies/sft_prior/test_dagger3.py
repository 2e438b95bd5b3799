"""The third DAgger round: it plays round 1's tasks with dagger2-25, trains on all three rounds
without the held-out tasks, and evaluates on the plan-band design with seeds 0-3."""

from pathlib import Path

import pytest
import yaml

from studies.sft_prior.band import run as band
from studies.sft_prior.cells import cell_config
from studies.sft_prior.dagger import collect as round1
from studies.sft_prior.dagger2 import collect as round2
from studies.sft_prior.dagger3 import band as band3
from studies.sft_prior.dagger3 import collect as round3

REPO = Path(__file__).resolve().parents[3]


def test_round_three_plays_round_ones_tasks_with_the_round_two_prior_into_its_own_folder() -> None:
    a, b = (round1.config(k, 2, round3.HERE, round3.RUNS) for k in (0, 1))
    tasks = round1.protocol()["collection"]["tasks"]
    assert sorted(a["task_ids"] + b["task_ids"], key=int) == tasks
    opts = a["prior"]["options"]
    assert opts["adapter"] == "sft/kept/textcraft-dagger2/step-000025"
    assert opts["dtype"] == "bfloat16"
    assert a["out_dir"] == "runs/sft-dagger/round3/shard0"
    assert round1.config(0, 2, round2.HERE, round2.RUNS)["prior"]["options"]["adapter"] \
        == "sft/kept/textcraft-dagger1/step-000100"  # round 2 unchanged


def test_the_sft_run_adds_round_three_to_rounds_one_and_two_from_dagger2() -> None:
    run2 = yaml.safe_load((round2.HERE / "sft.yaml").read_text())
    run3 = yaml.safe_load((round3.HERE / "sft.yaml").read_text())
    dirs = run3["demos"]["rollout_dirs"]
    assert dirs[:4] == run2["demos"]["rollout_dirs"]
    assert dirs[4:] == [str((round3.EVIDENCE / f"shard{k}").relative_to(REPO)) for k in (0, 1)]
    assert run3["init_adapter"] == "sft/kept/textcraft-dagger2/step-000025"
    assert (run3["max_steps"], run3["checkpoint_every"]) == (50, 25)
    assert run3["demos"]["exclude_tasks_files"] == run2["demos"]["exclude_tasks_files"]
    assert run3["out_dir"] not in (run2["out_dir"], "sft/out-dagger1")


def test_the_evaluation_is_the_plan_band_cell_with_the_adapter_and_four_seeds() -> None:
    kept = band3.KEPT / "step-000050"
    got = cell_config(band3.cell_protocol(kept), 1, band3.RUNS / "seed1")
    want = cell_config(band.protocol(), 1, band3.RUNS / "seed1")
    assert got["prior"]["options"].pop("adapter") == "sft/kept/textcraft-dagger3/step-000050"
    want["prior"]["options"].pop("adapter")
    assert got == want
    assert cell_config(band3.cell_protocol(kept), 3, band3.RUNS / "seed3")["seeds"] == [3]
    with pytest.raises(ValueError, match="not declared"):
        cell_config(band3.cell_protocol(kept), 4, band3.RUNS / "seed4")
    assert band.protocol()["cell"]["seeds"] == [0, 1]  # the plan-band protocol unchanged


def test_the_kept_cell_recomputes_exactly_with_its_seeds_0_1_read_apart() -> None:
    import json

    from studies.sft_prior.dagger3 import analyse

    p = analyse.kept_protocol()
    assert p["prior"]["options"]["adapter"] == "sft/kept/textcraft-dagger3/step-000050"
    assert p["cell"]["seeds"] == [0, 1, 2, 3]
    r = json.loads((band3.EVIDENCE / "result.json").read_text())
    assert r["runs"] == r["declared_runs"] == 24 * 4
    e = r["seeds_0_1_exploratory"]
    assert e["runs"] == e["declared_runs"] == 24 * 2  # only seeds 0 and 1 counted
    assert e["difference"] != r["difference"]
    assert r["sizing_exploratory"]["reserve_tasks"] == 26
    assert analyse.main(["--check"]) == 0
