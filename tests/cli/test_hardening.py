"""`amc run` under damaged inputs: a results file with garbage before its first line, and a
seeded fuzz over flag values at toy size.

The fuzz draws each case's flags and values from one seeded generator (so a failure reruns
exactly) and bounds every drawn run to a toy size (the synthetic tree, one task, N <= 4 unless
the value is absurd enough to be refused). Whatever it draws, ``amc`` must never crash: the
exit status is 0, 1 or 2, no traceback, and on 2 exactly one ``error:`` line and nothing
written (the test's folder compared file by file).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

from amc.cli import app
from amc.results import results_path
from tests.cli.test_bad_inputs import tree

runner = CliRunner()
BASE = ["--env", "synthetic", "--value", "exact", "-n", "2", "--steps", "2",
        "--resample-steps", "1", "--max-tasks", "1", "--quiet"]


@pytest.fixture()
def cwd(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("AMC_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    return tmp_path


@pytest.mark.parametrize("garbage", [b"\x89PNG\r\n\x1a\n\x00\xff", b"not json at all",
                                     b"[1, 2, 3]"])
def test_garbage_before_the_first_results_line_is_named_with_what_to_do(cwd, garbage) -> None:
    out = cwd / "out"
    first = runner.invoke(app, ["run", *BASE, "-m", "react", "--out", str(out)])
    assert first.exit_code == 0, first.output
    path = results_path(out, "react", 0)
    damaged = garbage + b"\n" + path.read_bytes()
    path.write_bytes(damaged)
    before = tree(cwd)
    r = runner.invoke(app, ["run", *BASE, "-m", "react", "--out", str(out)])
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert r.exit_code == 2 and len(lines) == 1, r.output
    assert lines[0].startswith(f"error: --out: {path}:1: ") and "delete that line" in lines[0]
    assert "Traceback" not in r.output and "codec" not in lines[0]
    assert path.read_bytes() == damaged and tree(cwd) == before  # nothing rewritten


@pytest.mark.parametrize("conflict", [False, True])
def test_a_task_recorded_twice_is_refused_on_resume_with_file_and_line(cwd, conflict) -> None:
    """Issue 64: a second record of a task (the same line again, or a conflicting one) was
    silently ignored and kept; now the run refuses before any work, naming file:line."""
    out = cwd / "out"
    args = ["run", *BASE, "-m", "react", "--out", str(out), "--max-tasks", "2"]
    assert runner.invoke(app, args).exit_code == 0
    path = results_path(out, "react", 0)
    first = path.read_text().splitlines()[0]
    again = first.replace('"task_id":', '"note":"x","task_id":', 1) if conflict else first
    damaged = path.read_bytes() + again.encode() + b"\n"
    path.write_bytes(damaged)
    before = tree(cwd)
    r = runner.invoke(app, args)
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    how = "with a different result" if conflict else "again"
    assert r.exit_code == 2 and len(lines) == 1, r.output
    assert lines[0].startswith(f"error: --out: {path}:3: task ") and \
        f"is recorded twice (line 1, then {how})" in lines[0]
    assert path.read_bytes() == damaged and tree(cwd) == before  # nothing rewritten


JUNK = ["", " ", "0", "-1", "1", "2", "3", "1.5", "-0", "nan", "inf", "1e23", ",", "a,b",
        "99999999999999999999999", "x" * 300, "/proc/amc", "/dev/null", "\u2603", "{", "[1",
        "&a [*a, *a]", "#x", "--bogus", "smc@3", "bon@2+exact", "react,bon@2", "smc@1e9",
        "0,0", "1,2", "[]", "{a: 1, a: 2}", "null", "yes", "..", "a\tb"]
FLAGS = ["-n", "--steps", "--beta", "--ess-threshold", "--resample", "--resample-steps",
         "--resampler", "-m", "--seeds", "--split", "--out", "--env", "--prior", "--value",
         "--model", "-S"]
KEYS = ["smc.n_particles", "smc.beta", "seeds", "methods", "task_ids", "limits.max_particles",
        "limits.max_particle_steps", "env.options.depth", "split", "out_dir", "values",
        "selection_value", "smc", "prior.options.cache_path", "max_concurrent_tasks"]


def _value(rng: random.Random, flag: str) -> str:
    """A drawn value: junk, or a small valid one (the run stays toy-sized)."""
    if rng.random() < 0.3:
        return {"-n": str(rng.randint(1, 4)), "--steps": str(rng.randint(2, 4)),
                "-m": rng.choice(["react", "bon@2", "smc@2", "react,bon@3"])}.get(flag, "1")
    return rng.choice(JUNK)


def _case(rng: random.Random, out: str) -> list[str]:
    args = ["run", *BASE, "--out", out]
    for _ in range(rng.randint(1, 3)):
        flag = rng.choice(FLAGS)
        value = _value(rng, flag)
        args += [flag, f"{rng.choice(KEYS)}={value}" if flag == "-S" else value]
    return args


@pytest.mark.parametrize("seed", range(4))
def test_random_flag_values_never_crash_and_a_refusal_writes_nothing(cwd, seed) -> None:
    rng = random.Random(5300 + seed)
    for k in range(12):  # 4 x 12 cases, each a toy run or a refusal
        out = str(cwd / f"out{k}")
        args = _case(rng, out)
        before = tree(cwd)
        r = runner.invoke(app, args)
        assert r.exit_code in (0, 1, 2), (args, r.output)
        assert r.exception is None or isinstance(r.exception, SystemExit), (args, r.exception)
        assert "Traceback" not in r.output, args
        if r.exit_code == 2:
            lines = [x for x in r.stderr.splitlines() if x.strip()]
            assert len(lines) == 1 and lines[0].startswith("error: "), (args, r.stderr)
            assert tree(cwd) == before, args
