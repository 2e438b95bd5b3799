"""The refusal-penalty cell: the round-3 design with only the SMC arm's value options (and
name) changed, Best-of-4 taken from the round-3 cell's kept runs."""

from studies.sft_prior.cells import cell_config
from studies.sft_prior.dagger3 import band as round3
from studies.sft_prior.refusals import run


def test_the_cell_is_round_three_with_the_refusal_penalty_and_no_best_of_4_replay() -> None:
    got = run.config(1)
    want = cell_config(round3.cell_protocol(run.ROUND3_KEPT), 1, run.RUNS / "seed1")
    assert got["methods"] == [run.ARM]
    assert got["values"] == {"refusals": {"name": "textcraft-progress",
                                          "options": {"invalid_penalty": 0.5}}}
    assert want["values"] == {"progress": {"name": "textcraft-progress"}}
    for k in ("methods", "values", "out_dir"):
        got.pop(k), want.pop(k)
    assert got == want
    assert list(run.cell_protocol()["cell"]["arms"]) == [run.ARM, "bon@4"]


def test_the_kept_cell_recomputes_exactly_on_all_declared_runs() -> None:
    import json

    from studies.sft_prior.refusals import analyse

    r = json.loads((run.EVIDENCE / "result.json").read_text())
    assert r["runs"] == r["declared_runs"] == 24 * 4
    assert r["vs_plain_progress_exploratory"]["runs"] == 24 * 4
    assert analyse.main(["--check"]) == 0
