"""``amc run``: run methods on an environment/prior/value and print a per-method table.

Configuration comes from (later wins): defaults, ``--config FILE`` (YAML, the sections of
:class:`amc.config.RunConfig`), ``-S key=value`` overrides, then the explicit flags below.

Exit status: 0 when every task finished, 1 when some failed (the others finished; the failed
ones are listed in ``*.failures.jsonl`` and rerun by the next ``amc run``), 2 for bad input
(including an output folder another run is writing, or a component that refuses to be built:
a missing API key, a value the prior cannot serve; nothing is written then either).
"""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path
from typing import Any

import typer
import yaml

from amc.cli.errors import friendly_errors
from amc.cli.run_checks import (
    FLAG_KEYS,
    FlagError,
    check_run,
    integers,
    items,
    name_config_error,
    text,
    value_settings,
)
from amc.config import ConfigError, RunConfig, load_run_config, load_yaml, parse_override
from amc.errors import ComponentError
from amc.reports.table import format_table
from amc.runner import (
    TasksFailed,
    run_methods,
    write_summary,
)


def typed_values(**flags: Any) -> dict[str, Any]:
    """The given flags (by flag name) as typed config values, each checked on its own."""
    out: dict[str, Any] = {}
    for name, v in flags.items():
        flag = "--" + name.replace("_", "-")
        if name in ("env", "prior", "model", "value", "resample", "resampler", "split"):
            v = text(flag, v)
        elif name == "methods":
            v = items(flag, v)
        elif name in ("seeds", "resample_steps"):
            v = integers(flag, v, least=0 if name == "seeds" else 1)
        elif name == "out" and v is not None:
            if not v.strip():
                raise FlagError(flag, "empty path")
            v = Path(v)  # a typed path: '#x' is a folder name, not a YAML comment
        if v is not None:
            out[flag] = v
    return out


def load_config(config: Path | None, section: str | None, set_: list[str],
                given: dict[str, Any]) -> RunConfig:
    """The run's config; a bad file, section, ``-S`` item or flag value names its flag."""
    if section is not None and config is None:
        raise FlagError("--section", "needs --config (the file whose section to use)")
    section = text("--section", section)
    if config is not None:
        try:
            load_yaml(config)
        except (ValueError, OSError, yaml.YAMLError) as err:
            raise FlagError("--config", err) from None
    for item in set_:
        try:
            parse_override(item)
        except (ValueError, yaml.YAMLError) as err:
            raise FlagError("--set", err) from None
    values: dict[str, Any] = {}
    for flag, v in given.items():
        values.update(value_settings(v) if flag == "--value" else {FLAG_KEYS[flag]: v})
    try:
        return load_run_config(config, set_, section, values)
    except ConfigError as err:
        raise name_config_error(err, given) from None
    except ValueError as err:  # file and overrides read above: the section is missing
        raise FlagError("--section", err) from None


def component_flag(component: str, given: dict[str, Any]) -> str:
    """The flag (or key) that chose a component that refused to be built."""
    if component == "prior" and "--model" in given and "--prior" not in given:
        return "--model"
    return {"env": "--env", "prior": "--prior", "value": "--value"}.get(component, component)


@friendly_errors
def run_cmd(
    config: Path | None = typer.Option(None, "--config", "-c", help="YAML run config."),
    section: str | None = typer.Option(None, help="Use this section of the config file."),
    set_: list[str] = typer.Option([], "--set", "-S", help="Override: key=value (repeatable)."),
    env: str | None = typer.Option(None, help="Environment name (synthetic, textcraft...)."),
    prior: str | None = typer.Option(None, help="Prior name (synthetic, embedded, openai...)."),
    model: str | None = typer.Option(None, help="Model name for API priors (prior.options.model)."),
    value: str | None = typer.Option(
        None, help="Value: registry name, a models:/ URI, or a served head's .../invocations URL."),
    methods: str | None = typer.Option(None, "--methods", "-m", help="e.g. react,bon@8,smc@8"),
    particles: int | None = typer.Option(None, "--particles", "-n", help="N per task."),
    steps: int | None = typer.Option(None, help="Max steps per particle."),
    beta: float | None = typer.Option(None, help="KL coefficient beta (> 0)."),
    resample: str | None = typer.Option(None, help="never | fixed | ess"),
    resample_steps: str | None = typer.Option(None, help="Comma list of steps, e.g. 4,12."),
    ess_threshold: float | None = typer.Option(None, help="rho in (0, 1]."),
    resampler: str | None = typer.Option(None, help="multinomial|systematic|stratified|residual"),
    split: str | None = typer.Option(None, help="Task split (train/test)."),
    max_tasks: int | None = typer.Option(None, help="Only the first K tasks."),
    seeds: str | None = typer.Option(None, help="Comma list of run seeds."),
    out: str | None = typer.Option(None, help="Output directory for results."),
    quiet: bool = typer.Option(False, help="No progress bars."),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Print the number of calls and the estimated cost; run nothing."),
) -> None:
    """Run methods (ReAct, Best-of-N, SMC) and print mean ± s.e. per method."""
    given = typed_values(env=env, prior=prior, model=model, value=value, methods=methods,
                         particles=particles, steps=steps, beta=beta, resample=resample,
                         resample_steps=resample_steps, ess_threshold=ess_threshold,
                         resampler=resampler, split=split, max_tasks=max_tasks, seeds=seeds,
                         out=out)
    cfg = load_config(config, section, set_, given)
    check_run(cfg, given)  # every refusal, before anything is written
    if dry_run:
        from amc.estimate import estimate, format_estimate

        typer.echo(format_estimate(estimate(cfg), cfg))
        return
    started = time.perf_counter()
    try:
        outcome = asyncio.run(run_methods(cfg, progress=not quiet))
        failure = None
    except TasksFailed as err:  # the other tasks finished: summarise them, then exit 1
        outcome, failure = err.outcome, str(err)
    except ComponentError as err:  # refused while building: nothing was written
        raise FlagError(component_flag(err.component, given), err) from None
    rows = write_summary(cfg, outcome, time.perf_counter() - started)
    typer.echo(format_table(rows, width=shutil.get_terminal_size((200, 24)).columns))
    typer.echo(f"\nresults: {Path(cfg.out_dir or '.')}")
    if failure is not None:
        typer.echo(f"error: {failure}", err=True)
        raise typer.Exit(1)
