"""``amc sft``: behaviour cloning of a benchmark's planner into the embedded model (LoRA).

Options come from :class:`amc.sft.config.SFTOptions` (defaults: TextCraft depths 1-3), the
``sft`` section of a params file (``--params``) or a YAML file of those fields (``--config``),
with ``-S key=value`` overrides on top. Prints one line per checkpoint (held-out loss and greedy
action accuracy) and the registered version; use the adapter with
``amc run --prior hf -S prior.options.adapter=<folder or models:/ URI>`` and the same prompt
options (``policy.json`` beside each checkpoint lists them).
"""

from __future__ import annotations

from pathlib import Path

import typer

from amc.cli.errors import friendly_errors
from amc.config import apply_overrides, load_yaml, validate


@friendly_errors
def sft_cmd(
    config: Path | None = typer.Option(None, "--config", "-c", help="YAML of SFT options."),
    params: Path | None = typer.Option(None, "--params", help="A params.yaml with an sft "
                                       "section (the DVC stage's options)."),
    set_: list[str] = typer.Option([], "--set", "-S", help="Override: key=value (repeatable)."),
    out: Path | None = typer.Option(None, "--out", "-o", help="Output folder (out_dir)."),
    no_register: bool = typer.Option(False, "--no-register", help="No MLflow run/registry."),
) -> None:
    """Fine-tune the embedded model on planner demonstrations; register amc-policy-<env>."""
    from amc.sft.config import SFTOptions
    from amc.sft.stage import run_sft

    if config is not None and params is not None:
        raise ValueError("give --config or --params, not both")
    for f in (config, params):
        if f is not None and not f.is_file():
            raise FileNotFoundError(f"file not found: {f}")
    data = load_yaml(config) if config else {}
    if params is not None:
        data = dict(load_yaml(params).get("sft") or {})
    if out is not None:
        data["out_dir"] = str(out)
    if no_register:
        data["track"] = False
    opts = validate(SFTOptions, apply_overrides(data, set_), "sft options")
    metrics = run_sft(opts, log=typer.echo)
    typer.echo(f"sft: {metrics['steps']} steps, {len(metrics['checkpoints'])} checkpoints, "
               f"{metrics['costs'].get('wall_s', 0):.0f} s wall, "
               f"{metrics['costs'].get('cpu_s', 0):.0f} s CPU -> {opts.out_dir}")
