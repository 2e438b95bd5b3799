"""The late-resampling cell: the round-3 design with only the SMC arm's schedule (and name)
changed, Best-of-4 taken from the round-3 cell's kept runs."""

from studies.sft_prior.cells import cell_config
from studies.sft_prior.dagger3 import band as round3
from studies.sft_prior.late import run


def test_the_cell_is_round_three_with_resampling_from_step_four_and_no_best_of_4_replay() -> None:
    got = run.config(2)
    want = cell_config(round3.cell_protocol(run.ROUND3_KEPT), 2, run.RUNS / "seed2")
    assert got["methods"] == [run.ARM]
    assert got["smc"].pop("resample_steps") == list(range(4, 12))
    assert want["smc"].pop("resample_steps") == list(range(1, 12))
    assert got["values"] == {"progress-late": want["values"]["progress"]}
    for k in ("methods", "values", "out_dir"):
        got.pop(k), want.pop(k)
    assert got == want
    assert list(run.cell_protocol()["cell"]["arms"]) == [run.ARM, "bon@4"]


def test_the_kept_cell_recomputes_exactly_on_all_declared_runs() -> None:
    import json

    from studies.sft_prior.late import analyse

    r = json.loads((run.EVIDENCE / "result.json").read_text())
    assert r["runs"] == r["declared_runs"] == 24 * 4
    assert r["vs_every_step_exploratory"]["runs"] == 24 * 4
    assert analyse.main(["--check"]) == 0
