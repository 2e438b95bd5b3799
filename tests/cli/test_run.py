"""Smoke tests of `amc run` at toy size, resume, and its one-line errors."""

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from amc.cli import app
from amc.results import read_jsonl

runner = CliRunner()
ARGS = ["run", "--env", "synthetic", "--value", "exact", "-n", "8", "--steps", "3",
        "--beta", "0.5", "--resample-steps", "1,2", "--max-tasks", "6", "--quiet"]


def test_run_prints_a_table_and_writes_results(tmp_path):
    r = runner.invoke(app, [*ARGS, "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    for m in ("react", "bon", "smc"):
        assert m in r.output
        recs = list(read_jsonl(tmp_path / f"{m}__seed0.jsonl"))
        assert sorted(x["task_id"] for x in recs) == [str(i) for i in range(6)]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert {row["method"] for row in summary["methods"]} == {"react", "bon", "smc"}
    assert summary["config"]["smc"]["beta"] == 0.5


def test_resume_skips_finished_tasks_and_rejects_other_configs(tmp_path):
    out = ["--out", str(tmp_path), "-m", "smc"]
    assert runner.invoke(app, [*ARGS, *out]).exit_code == 0
    f = tmp_path / "smc__seed0.jsonl"
    lines = f.read_text().splitlines()
    f.write_text("\n".join(lines[:3]) + "\n" + lines[3][:40])  # crash: 3 done, one torn
    r = runner.invoke(app, [*ARGS, *out])
    assert r.exit_code == 0, r.output
    ids = [x["task_id"] for x in read_jsonl(f)]
    assert sorted(ids) == [str(i) for i in range(6)] and len(ids) == 6  # none lost or doubled
    assert ids[:3] == [json.loads(x)["task_id"] for x in lines[:3]]  # finished ones not redone
    r = runner.invoke(app, [*ARGS, *out, "--beta", "0.7"])
    assert r.exit_code == 2 and "different configuration" in r.output


@pytest.mark.parametrize("args,msg", [
    (["-n", "0"], "n_particles"), (["--env", "nope"], "unknown environment"),
    (["--beta", "-1"], "beta"), (["--ess-threshold", "1.5"], "ess_threshold"),
    (["-c", "/no/such.yaml"], "not found"), (["-m", "smc@x"], "bad method"),
    (["--resampler", "zzz"], "unknown resampler"), (["-S", "smc.bogus=1"], "bogus"),
    (["--prior", "nope"], "unknown prior"),
])
def test_bad_input_is_one_line_exit_2(tmp_path, args, msg):
    r = runner.invoke(app, ["run", "--out", str(tmp_path), *args])
    assert r.exit_code == 2
    assert msg in r.output and "Traceback" not in r.output


def test_config_file_and_overrides(tmp_path):
    cfg = tmp_path / "run.yaml"
    cfg.write_text("env: {name: synthetic, options: {depth: 2}}\nsmc: {n_particles: 4, "
                   "max_steps: 2, resample_steps: [1]}\nvalue: {name: exact}\nmax_tasks: 2\n"
                   "methods: [bon, smc]\n")
    r = runner.invoke(app, ["run", "-c", str(cfg), "-S", "seeds=[0,1]", "--out", str(tmp_path),
                            "--quiet"])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "smc__seed1.jsonl").exists()


def test_module_entry_point(tmp_path):
    p = subprocess.run([sys.executable, "-m", "amc", "run", "-n", "0"], capture_output=True,
                       text=True)
    assert p.returncode == 2 and p.stderr.startswith("error:")
