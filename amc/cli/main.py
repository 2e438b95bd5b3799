"""The ``amc`` application: built here, in one place, from the command modules.

Each command module (:mod:`.run`, :mod:`.envs`, :mod:`.fetch`, :mod:`.priors`, :mod:`.value`,
:mod:`.pipeline`, :mod:`.grpo`) defines plain functions and knows nothing of the application;
this module attaches them. Imports point one way only (``main`` -> command modules ->
:mod:`.errors`), so there is no import circle and no second ``__main__`` module.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import typer

from amc.cli import envs, fetch, grpo, pipeline, priors, run, sft, value, value_auc
from amc.cli.errors import EXTRAS_HELP, OneLineErrors

app = typer.Typer(
    name="amc", cls=OneLineErrors,
    help="Agentic Monte Carlo: steer black-box LLM agents with SMC and a learned value.",
    epilog=EXTRAS_HELP, no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

fetch_app = typer.Typer(
    name="fetch", no_args_is_help=True,
    help="Put a benchmark's third-party data in place (pinned, checksum-verified).",
)


def package_version() -> str:
    """The installed ``amc`` distribution's version (``unknown`` when run from a bare tree)."""
    try:
        return version("amc")
    except PackageNotFoundError:  # pragma: no cover - source tree without an install
        return "unknown"


def _version(show: bool) -> None:
    if show:
        typer.echo(f"amc {package_version()}")
        raise typer.Exit()


@app.callback()
def _root(
    show_version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
) -> None:
    """Agentic Monte Carlo: steer black-box LLM agents with SMC and a learned value."""


COMMANDS: dict[str, Callable[..., Any]] = {
    "run": run.run_cmd,
    "serve-env": envs.serve_env,
    "serve-prior": priors.serve_prior,
    "prior-info": priors.prior_info,
    "dataset": value.dataset_cmd,
    "train": value.train_cmd,
    "value-auc": value_auc.value_auc_cmd,
    "collect": pipeline.collect_cmd,
    "evaluate": pipeline.evaluate_cmd,
    "promote": pipeline.promote_cmd,
    "report": pipeline.report_cmd,
    "results-doc": pipeline.results_doc_cmd,
    "calibrate": pipeline.calibrate_cmd,
    "grpo": grpo.grpo_cmd,
    "sft": sft.sft_cmd,
}
"""Top-level commands by name (``amc <name>``)."""

FETCHERS: dict[str, Callable[..., Any]] = {
    "textcraft": fetch.fetch_textcraft_cmd, "webshop": fetch.fetch_webshop_cmd}
"""``amc fetch <benchmark>``: one command per benchmark with third-party data."""

for _name, _fn in COMMANDS.items():
    app.command(_name)(_fn)
for _name, _fn in FETCHERS.items():
    fetch_app.command(_name)(_fn)
    app.command(f"fetch-{_name}", hidden=True)(_fn)  # the names of earlier releases
app.add_typer(fetch_app)


def main() -> None:  # pragma: no cover - console entry point
    app(prog_name="amc")
