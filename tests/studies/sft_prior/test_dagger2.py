"""The second DAgger round: it plays round 1's tasks with dagger1-100, trains on both rounds
without the held-out tasks, and evaluates on the plan-band cell's design unchanged."""

from pathlib import Path

import yaml

from studies.sft_prior.band import run as band
from studies.sft_prior.cells import cell_config
from studies.sft_prior.dagger import collect as round1
from studies.sft_prior.dagger2 import band as band2
from studies.sft_prior.dagger2 import collect as round2

REPO = Path(__file__).resolve().parents[3]


def test_round_two_plays_round_ones_tasks_with_the_round_one_prior_into_its_own_folder() -> None:
    a, b = (round1.config(k, 2, round2.HERE, round2.RUNS) for k in (0, 1))
    tasks = round1.protocol()["collection"]["tasks"]
    assert sorted(a["task_ids"] + b["task_ids"], key=int) == tasks
    opts = a["prior"]["options"]
    assert opts["adapter"] == "sft/kept/textcraft-dagger1/step-000100"
    assert opts["dtype"] == "bfloat16"
    assert a["out_dir"] == "runs/sft-dagger/round2/shard0"
    assert round1.config(0, 2)["out_dir"] == "runs/sft-dagger/round1/shard0"  # round 1 unchanged


def test_the_sft_run_adds_round_two_to_round_one_from_dagger1_without_held_out_tasks() -> None:
    run1 = yaml.safe_load((REPO / "studies/sft_prior/dagger/sft.yaml").read_text())
    run2 = yaml.safe_load((round2.HERE / "sft.yaml").read_text())
    dirs = run2["demos"]["rollout_dirs"]
    assert dirs[:2] == run1["demos"]["rollout_dirs"]
    assert dirs[2:] == [str((round2.EVIDENCE / f"shard{k}").relative_to(REPO)) for k in (0, 1)]
    assert run2["init_adapter"] == "sft/kept/textcraft-dagger1/step-000100"
    assert "studies/sft_prior/heldout.json" in run2["demos"]["exclude_tasks_files"]
    assert run2["out_dir"] != run1["out_dir"]


def test_the_evaluation_is_the_plan_band_cell_with_only_the_adapter_changed() -> None:
    kept = band2.KEPT / "step-000050"
    got = cell_config(band2.cell_protocol(kept), 1, band2.RUNS / "seed1")
    want = cell_config(band.protocol(), 1, band2.RUNS / "seed1")
    assert got["prior"]["options"].pop("adapter") == "sft/kept/textcraft-dagger2/step-000050"
    want["prior"]["options"].pop("adapter")
    assert got == want
    assert band.protocol()["prior"]["options"]["adapter"].endswith("dagger1/step-000100")


def test_the_kept_cell_recomputes_exactly_under_the_round_two_checkpoint() -> None:
    from studies.sft_prior.dagger2 import analyse

    p = analyse.kept_protocol()
    assert p["prior"]["options"]["adapter"] == "sft/kept/textcraft-dagger2/step-000025"
    declared = yaml.safe_load((band2.HERE / "protocol.json").read_text())["declared_utc"]
    assert p["declared_utc"] == declared != band.protocol()["declared_utc"]
    assert analyse.main(["--check"]) == 0
