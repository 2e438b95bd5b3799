"""``amc value-auc``: how a registered value ranks a value dataset's held-out states.

A thin wrapper of :func:`amc.value.held_out.held_out_auc`: the dataset's split (default
``test``), rebuilt from the trajectory files it was made from, scored by ``--value`` (built
with ``--prior`` and ``--env``, options from ``-c`` YAML and ``-S`` overrides such as
``-S value.options.top=10`` or ``-S prior.options.base_url=http://127.0.0.1:8080/v1``); prints
the within-(task, step) AUC per step and overall, and writes the report as JSON with ``--out``.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import typer

from amc.cli.errors import friendly_errors
from amc.config import apply_overrides, load_yaml, validate


@friendly_errors
def value_auc_cmd(
    trajectories: list[Path] = typer.Argument(
        ..., help="The JSON-lines files the dataset was built from, in the same order."),
    dataset: Path = typer.Option(..., "--dataset", "-d", help="Dataset directory (amc dataset)."),
    value: str = typer.Option("zero-shot-yesno", help="Value registry name."),
    prior: str = typer.Option("embedded", help="Prior the LLM values call through."),
    env: str = typer.Option("textcraft", help="Environment of the trajectories."),
    split: str = typer.Option("test", help="Dataset split to score."),
    out: Path | None = typer.Option(None, "--out", "-o", help="Write the report (JSON) here."),
    config: Path | None = typer.Option(None, "--config", "-c", help="YAML with HeldOutConfig."),
    set_: list[str] | None = typer.Option(None, "--set", "-S", help="Override key=value."),
) -> None:
    """Within-(task, step) AUC of a value on a dataset's held-out states."""
    from amc.value.held_out import HeldOutConfig, held_out_auc

    base = {"env": {"name": env}, "prior": {"name": prior}, "value": {"name": value},
            "split": split}
    data = apply_overrides({**base, **(load_yaml(config) if config else {})}, set_ or [])
    cfg = validate(HeldOutConfig, data, "value-auc config")
    report = asyncio.run(held_out_auc(cfg, dataset, trajectories))
    steps = ", ".join(f"step {t}: {a:.3f}" for t, a in report["auc_within_by_step"].items())
    auc, share = report["auc_within"], report["constant_share"]
    typer.echo(f"{cfg.value.name} on {report['states']} {cfg.split} states of {dataset} "
               f"({report['groups']} (task, step) groups, {report['calls']} calls)")
    typer.echo(f"auc within (task, step): {'n/a' if auc is None else f'{auc:.3f}'}"
               f" ({steps or 'no step holds both outcomes'})")
    lo, hi = report["score_min"], report["score_max"]
    typer.echo(f"constant within a group: {'n/a' if share is None else f'{share:.0%}'} of the "
               "groups" + ("" if lo is None else f"; scores from {lo:.4g} to {hi:.4g}"))
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
        typer.echo(f"report: {out}")
