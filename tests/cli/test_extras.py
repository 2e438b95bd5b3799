"""A core install explains itself: a command whose extra is missing says which to install, in
one line, and ``--help`` says which commands need which extra, its flags shown as flags."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from amc.cli import app
from amc.cli.errors import missing_extra

ROOT = Path(__file__).resolve().parents[2]


def test_a_missing_extra_is_one_line_naming_it(tmp_path: Path) -> None:
    """scipy blocked as a core install lacks it: `amc promote` imports it first."""
    code = ("import sys; sys.modules['scipy'] = None\n"
            "from amc.cli.main import app; app(['promote'], prog_name='amc')")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                       text=True, timeout=300, env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert r.returncode == 2, r.stderr[-2000:]
    assert r.stderr.splitlines() == ["error: this command needs scipy, which the core install "
                                     "leaves out: pip install 'amc[value]'"]


def test_a_module_of_no_extra_stays_an_error() -> None:
    assert missing_extra(ModuleNotFoundError("no", name="amc.nothing")) is None
    assert "amc[pipeline]" in (missing_extra(ModuleNotFoundError(name="mlflow.store")) or "")


def test_help_names_the_extras_and_shows_flags_without_a_value() -> None:
    out = " ".join(CliRunner().invoke(app, ["--help"], env={"COLUMNS": "100"}).output.split())
    assert "promote, report, results-doc and calibrate need the pipeline extra: pip install " \
        "'amc[pipeline]'" in out
    assert "<bool>" not in out and "--version Print" in out and "--help Show" in out
    sub = CliRunner().invoke(app, ["collect", "--help"], env={"COLUMNS": "100"}).output
    assert "<bool>" not in sub and "--quiet" in sub
