"""`amc run`'s bad-input table (tests/cli/bad_inputs.yaml): every refused case is one
`error:` line naming the flag to fix, exit status 2, before anything is written (the test's
folder is compared file by file before and after); every accepted case runs. Most cases run
in process; a few as real `python -m amc` processes."""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from amc.cli import app
from amc.ports import free_port

TABLE = yaml.safe_load((Path(__file__).with_name("bad_inputs.yaml")).read_text())
REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()


def _id(case: dict[str, Any]) -> str:
    return " ".join(case["args"]) or "<base>"


@pytest.fixture()
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The placeholders' files and folders; the test runs in its own empty cwd."""
    files = {
        "cfg": "env: {name: synthetic}\nsmc: {n_particles: 2, max_steps: 2, resample_steps: [1]}"
               "\nvalue: {name: exact}\nmax_tasks: 1\n",
        "sections": "small: {env: {name: synthetic}, smc: {n_particles: 2, max_steps: 2, "
                    "resample_steps: [1]}, value: {name: exact}, max_tasks: 1}\nscalar: 3\n",
        "bad_yaml": "env: [unclosed\n", "list_yaml": "- a\n- b\n",
        "bad_key_yaml": "smc: {bogus: 1}\n", "bad_value_yaml": "smc: {n_particles: 0}\n",
        "file": "not a folder\n",
        "dup_yaml": "seeds: [0]\nmax_tasks: 1\nseeds: [1]\n",
        "dup_nested_yaml": "smc:\n  beta: 1\n  n_particles: 2\n  beta: 2\n",
        "bomb_yaml": BOMB, "loop_yaml": "env: &e {name: synthetic, options: {x: *e}}\n",
        "anchors_yaml": "value: &v {name: exact}\nvalues: {twin: {<<: *v, options: {}}}\n"
                        "env: {name: synthetic}\nmax_tasks: 1\n"
                        "smc: {n_particles: 2, max_steps: 2, resample_steps: [1]}\n",
    }
    out = {"tmp": str(tmp_path), "out": str(tmp_path / "out"), "dir": str(tmp_path / "a-dir"),
           "dead": f"http://127.0.0.1:{free_port()}", "long": "x" * 300, "ro": read_only(tmp_path),
           "rnd": str(tmp_path / "random.bin"), "bomb_set": "x=" + BOMB_FLOW}
    (tmp_path / "a-dir").mkdir()
    (tmp_path / "random.bin").write_bytes(random.Random(53).randbytes(4096))
    for name, text in files.items():
        (tmp_path / f"{name}.yaml").write_text(text)
        out[name] = str(tmp_path / f"{name}.yaml")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("AMC_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    return out


def _bomb(levels: int, flow: bool) -> str:
    """A YAML alias bomb: each level lists the previous one nine times (9^levels values)."""
    rows = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    rows += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "{" + ", ".join(rows) + "}" if flow else "\n".join(rows) + "\n"


BOMB, BOMB_FLOW = _bomb(9, flow=False), _bomb(9, flow=True)


def read_only(tmp_path: Path) -> str:
    """A folder no file can be created in: read-only for a normal user; /sys for root (who
    may write anywhere a mode bit forbids; sysfs refuses new entries)."""
    if os.geteuid() == 0:
        return "/sys"
    ro = tmp_path / "read-only"
    ro.mkdir(mode=0o555)
    return str(ro)


def fill(a: str, places: dict[str, str]) -> str:
    for k, v in places.items():
        a = a.replace("{" + k + "}", v)
    return a


def tree(root: Path) -> dict[str, int]:
    """Every path under ``root`` with its size (folders: -1)."""
    return {str(p): (-1 if p.is_dir() else p.stat().st_size) for p in root.rglob("*")}


def argv(case: dict[str, Any], places: dict[str, str]) -> list[str]:
    base = [] if case.get("bare") else TABLE["base"]
    return ["run", "--quiet", "--out", places["out"], *base,
            *(fill(a, places) for a in case["args"])]


def invoke(args: list[str], in_subprocess: bool, env: dict[str, str] | None = None,
           monkeypatch: pytest.MonkeyPatch | None = None) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of ``amc <args>`` with ``env`` set."""
    env = env or {}
    if in_subprocess:
        p = subprocess.run([sys.executable, "-m", "amc", *args], capture_output=True, text=True,
                           timeout=600, env={**os.environ, "PYTHONPATH": str(REPO), **env})
        return p.returncode, p.stdout, p.stderr
    for k, v in env.items():
        assert monkeypatch is not None
        monkeypatch.setenv(k, v)
    r = runner.invoke(app, args)
    return r.exit_code, r.stdout, r.stderr


def case_env(case: dict[str, Any], places: dict[str, str]) -> dict[str, str]:
    return {k: fill(str(v), places) for k, v in (case.get("env") or {}).items()}


def test_the_table_is_large_and_covers_every_flag() -> None:
    refused, accepted = TABLE["refused"], TABLE["accepted"]
    assert len(refused) + len(accepted) >= 200 and len(accepted) >= 25
    assert sum(bool(c.get("subprocess")) for c in refused) >= 3
    flags = {"--config", "--section", "--set", "--env", "--prior", "--model", "--value",
             "--methods", "--particles", "--steps", "--beta", "--resample", "--resample-steps",
             "--ess-threshold", "--resampler", "--split", "--max-tasks", "--seeds", "--out"}
    assert flags <= {c["names"] for c in refused}


@pytest.mark.parametrize("case", TABLE["refused"], ids=_id)
def test_a_bad_input_is_one_error_line_and_exit_2_before_any_work(case, places,
                                                                   monkeypatch) -> None:
    before = tree(Path(places["tmp"]))
    code, stdout, stderr = invoke(argv(case, places), bool(case.get("subprocess")),
                                  case_env(case, places), monkeypatch)
    lines = [x for x in stderr.splitlines() if x.strip()]
    assert code == 2, (code, stdout, stderr)
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    assert case["names"] in lines[0] and case.get("says", "") in lines[0], lines[0]
    assert not re.match(r"error: (\S+): \1:", lines[0]), lines[0]  # no doubled prefix
    assert "Traceback" not in stdout + stderr
    assert not Path(places["out"]).exists()  # refused before the output folder is made
    assert list(Path.cwd().iterdir()) == []  # no runs/, no mlruns/, no .cache/
    assert tree(Path(places["tmp"])) == before  # no cache file, no folder: nothing at all


@pytest.mark.parametrize("case", TABLE["accepted"], ids=_id)
def test_an_accepted_input_runs(case, places, monkeypatch) -> None:
    code, stdout, stderr = invoke(argv(case, places), bool(case.get("subprocess")),
                                  case_env(case, places), monkeypatch)
    assert code == 0, (stdout, stderr)
    assert "error:" not in stderr
    if "writes" in case:
        folder = Path(fill(case["writes"], places))
        assert (folder / "summary.json").is_file() and any(folder.glob("*__seed0.jsonl"))


def test_the_usage_page_lists_the_exit_codes_the_cli_uses() -> None:
    text = (REPO / "docs" / "usage.md").read_text()
    section = text.split("### Errors and exit codes", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1].strip() for line in section.splitlines()
            if line.startswith("| ") and line.split("|")[1].strip().isdigit()]
    assert rows == ["0", "1", "2", "130"]


def test_the_usage_pages_limits_are_the_codes_defaults() -> None:
    from amc.config import YAML_MAX_VALUES, LimitsConfig

    row = next(line for line in (REPO / "docs" / "usage.md").read_text().splitlines()
               if line.startswith("| 2 |"))
    lim = LimitsConfig()
    assert f"`AMC_YAML_MAX_VALUES` values, default {YAML_MAX_VALUES})" in row
    assert f"`limits.max_particles`, default {lim.max_particles};" in row
    assert lim.max_particle_steps == 10**8 and "default 10^8" in row
