"""``python -m amc.pipeline.round`` says what it did: a line per finished stage, one per round.

Real stages of the synthetic toy pipeline (collect and dataset, in a temp workdir, no DVC
recording); the whole round's output is checked by the two-round end-to-end test
(``test_rounds_e2e.py``). The command line itself (``--help``, ``--stages``) at argparse level.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from amc.pipeline import round as one_round
from amc.pipeline.params import PipelineParams, load_params
from tests.pipeline.conftest import TOY_PARAMS


def test_help_names_the_stages_and_the_options(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        one_round.main(["--help"])
    out = " ".join(capsys.readouterr().out.split())  # argparse wraps the text
    assert exc.value.code == 0
    assert "usage: python -m amc.pipeline.round" in out
    assert "collect -> dataset -> train -> evaluate -> promote -> report" in out
    assert "--stages" in out and "--json" in out and "params.yaml" in out


def test_the_arguments_reach_the_stage_loader_as_it_reads_them() -> None:
    args = one_round._args([])
    assert (args.params, args.stages, args.json) == ("params.yaml", list(one_round.STAGES), False)
    args = one_round._args(["p.yaml", "--stages", " collect, dataset ", "--json"])
    assert (args.params, args.stages, args.json) == ("p.yaml", ["collect", "dataset"], True)


@pytest.mark.parametrize("stages", ["collect,nope", ",", ""])
def test_an_unknown_or_empty_stage_list_is_refused(
        stages: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        one_round.main(["--stages", stages])
    assert exc.value.code == 2 and "--stages: unknown" in capsys.readouterr().err


def test_each_finished_stage_prints_what_it_made(workdir: Path) -> None:
    Path("params.yaml").write_text(yaml.safe_dump({**TOY_PARAMS, "rounds": {"enabled": True}}))
    lines: list[str] = []
    rec = one_round.run_round(load_params(), ("collect", "dataset"), record=False,
                              say=lines.append)
    assert rec["round"] == 0 and set(rec["steps"]) == {"collect", "dataset"}
    rows = rec["steps"]["dataset"]["rows"]
    assert len(lines) == 3
    # the counts collected: 12 (task, seed) records of G = 4 rollouts each
    assert re.fullmatch(r"round 0 · collect: 12 tasks, seeds \[1000\]: 12 records, 48 rollouts "
                        r"in data/trajectories/round-0000 \(\d+\.\d s\)", lines[0]), lines[0]
    parts = ", ".join(f"{k} {v}" for k, v in rows.items())
    assert lines[1].startswith(f"round 0 · dataset: {sum(rows.values())} rows ({parts}) from "
                               "rounds [0], content ")
    assert rec["steps"]["dataset"]["content_hash"][:12] in lines[1]
    assert lines[2] == "round 0 open (seeds [1000])"  # promote closes a round; it did not run


def test_the_gate_decision_is_the_rounds_last_line() -> None:
    rec = {"round": 3, "status": "closed", "seeds": [3000],
           "steps": {"promote": {"promote": False, "model": "amc-value-x",
                                 "challenger_version": "4"}}}
    assert one_round.round_line(rec) == "round 3 closed: kept amc-value-x v4 (seeds [3000])"
    ev = {"status": "complete", "n_tasks": 5, "seeds": [0, 1], "methods": {"bon@4": {},
                                                                            "amc@4": {}}}
    p = PipelineParams.model_validate(TOY_PARAMS)
    assert (one_round.describe("evaluate", ev, None, p)
            == "complete: 5 tasks x 2 seeds, bon@4, amc@4")
    assert one_round.describe("promote", {"promote": True, "reason": "p 0.01 < 0.05"}, None,
                              p) == "promoted: p 0.01 < 0.05"
    assert one_round.describe("report", {}, None, p) == f"summary in {p.report.summary_file}"
