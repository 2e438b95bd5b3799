"""``amc run``: run methods on an environment/prior/value and print a per-method table.

Configuration comes from (later wins): defaults, ``--config FILE`` (YAML, the sections of
:class:`amc.config.RunConfig`), ``-S key=value`` overrides, then the explicit flags below.

Exit status: 0 when every task finished, 1 when some failed (the others finished; the failed
ones are listed in ``*.failures.jsonl`` and rerun by the next ``amc run``), 2 for bad input
(including an output folder another run is writing).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import typer

from amc.cli.errors import friendly_errors
from amc.config import load_run_config
from amc.runner import (
    TasksFailed,
    format_table,
    resolve_methods,
    run_methods,
    write_summary,
)


def value_flags(value: str | None) -> list[str]:
    """``--value``: a registry name, a ``models:/`` URI or model folder (the in-process
    ``learned`` value), or a served head's ``http(s)://.../invocations`` (the ``remote`` value)."""
    if value is None:
        return []
    if value.startswith(("http://", "https://")):
        return ["value.name=remote", f"value.options.url={value}"]
    if value.startswith("models:/") or Path(value).exists():
        return ["value.name=learned", f"value.options.model={value}"]
    return [f"value.name={value}"]


def _csv(s: str | None) -> list[str] | None:
    return None if s is None else [x.strip() for x in s.split(",") if x.strip()]


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
    out: Path | None = typer.Option(None, help="Output directory for results."),
    quiet: bool = typer.Option(False, help="No progress bars."),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Print the number of calls and the estimated cost; run nothing."),
) -> None:
    """Run methods (ReAct, Best-of-N, SMC) and print mean ± s.e. per method."""
    if config is not None and not config.is_file():
        raise FileNotFoundError(f"config file not found: {config}")
    flags: list[str] = list(set_)
    simple = {"env.name": env, "prior.name": prior, "prior.options.model": model,
              "smc.n_particles": particles, "smc.max_steps": steps, "smc.beta": beta,
              "smc.resample": resample, "smc.ess_threshold": ess_threshold,
              "smc.resampler": resampler, "split": split, "max_tasks": max_tasks,
              "out_dir": out}
    flags += [f"{k}={v}" for k, v in simple.items() if v is not None]
    flags += value_flags(value)
    for key, lst in (("methods", _csv(methods)), ("smc.resample_steps", _csv(resample_steps)),
                     ("seeds", _csv(seeds))):
        if lst is not None:
            flags.append(f"{key}=[{', '.join(lst)}]")
    cfg = load_run_config(config, flags, section)
    resolve_methods(cfg)  # fail on a bad method spec before building anything
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
    rows = write_summary(cfg, outcome, time.perf_counter() - started)
    typer.echo(format_table(rows))
    typer.echo(f"\nresults: {Path(cfg.out_dir or '.')}")
    if failure is not None:
        typer.echo(f"error: {failure}", err=True)
        raise typer.Exit(1)
