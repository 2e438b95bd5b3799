"""The application itself: one ``app`` built from the command modules, --version, ``amc fetch``,
and user errors (YAML included) as one line with exit status 2."""

import subprocess
import sys

from typer.testing import CliRunner

from amc.cli import app
from amc.cli.main import COMMANDS, FETCHERS, package_version

runner = CliRunner()


def test_version_flag_prints_the_installed_version():
    r = runner.invoke(app, ["--version"])
    assert r.exit_code == 0
    assert r.output.strip() == f"amc {package_version()}"
    assert package_version() != "unknown"


def test_every_command_and_fetcher_is_attached():
    r = runner.invoke(app, ["--help"])
    assert r.exit_code == 0
    for name in COMMANDS:
        assert name in r.output
    r = runner.invoke(app, ["fetch", "--help"])
    assert r.exit_code == 0 and all(name in r.output for name in FETCHERS)


def test_fetch_webshop_fixture_through_the_group(tmp_path):
    r = runner.invoke(app, ["fetch", "webshop", "--fixture", "--out", str(tmp_path / "ws")])
    assert r.exit_code == 0, r.output
    assert any((tmp_path / "ws").iterdir())


def test_yaml_syntax_errors_are_one_line_user_errors(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("smc: {beta: [0.5\n")
    for flag, args in (("--config", ["run", "-c", str(bad), "--dry-run"]),
                       ("--set", ["run", "--env", "synthetic", "-S", "smc.beta=[0.5",
                                  "--dry-run"])):
        r = runner.invoke(app, args)
        assert r.exit_code == 2, r.output
        err = r.stderr if hasattr(r, "stderr") else r.output
        assert err.startswith(f"error: {flag}: invalid YAML") and err.count("\n") == 1, err
        assert "Traceback" not in r.output


def test_command_modules_do_not_import_the_app():
    """No import circle: importing a command module leaves amc.cli.main unimported."""
    code = ("import sys, amc.cli.run, amc.cli.pipeline, amc.cli.value, amc.cli.fetch; "
            "print('amc.cli.main' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_value_flag_maps_urls_uris_and_names(tmp_path):
    from amc.cli.run_checks import value_settings
    from amc.config import load_run_config

    url = "http://127.0.0.1:5999/invocations"
    assert value_settings(url) == {"value.name": "remote", "value.options": {"url": url}}
    assert value_settings("models:/amc-value-textcraft@champion")["value.name"] == "learned"
    assert value_settings("runs:/0123/model")["value.options"] == {"model": "runs:/0123/model"}
    assert value_settings(str(tmp_path)) == {"value.name": "learned",
                                             "value.options": {"model": str(tmp_path)}}
    assert value_settings("exact") == {"value.name": "exact"}
    cfg = load_run_config(None, ["env.name=synthetic"], values=value_settings(url))
    assert (cfg.value.name, cfg.value.options["url"]) == ("remote", url)
