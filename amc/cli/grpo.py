"""``amc grpo``: GRPO fine-tuning of a local model with LoRA on an environment's train split.

Options come from :class:`amc.grpo.config.GRPOOptions` (defaults: the CPU miniature on
TextCraft depth 1), a YAML file of those fields (``--config``, e.g. ``configs/grpo/gpu.yaml``)
and ``-S key=value`` overrides on top. Prints the curve, the costs and the registered version;
evaluate the policy with ``amc run --prior hf -S prior.options.adapter=<folder or models:/ URI>``.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from amc.cli.errors import friendly_errors
from amc.config import apply_overrides, load_yaml, validate


@friendly_errors
def grpo_cmd(
    config: Path | None = typer.Option(None, "--config", "-c", help="YAML of GRPO options."),
    set_: list[str] = typer.Option([], "--set", "-S", help="Override: key=value (repeatable)."),
    out: Path | None = typer.Option(None, "--out", "-o", help="Output folder (out_dir)."),
    steps: int | None = typer.Option(None, help="Rollout-and-update rounds."),
    seed: int | None = typer.Option(None, help="Run seed."),
    no_register: bool = typer.Option(False, "--no-register", help="No MLflow run/registry."),
) -> None:
    """GRPO on the embedded model (LoRA): train, log the curve, register amc-policy-<env>."""
    from amc.grpo.config import GRPOOptions
    from amc.grpo.trainer import train

    if config is not None and not config.is_file():
        raise FileNotFoundError(f"config file not found: {config}")
    data = load_yaml(config) if config else {}
    flags = {"out_dir": out, "steps": steps, "seed": seed}
    data.update({k: str(v) if isinstance(v, Path) else v for k, v in flags.items()
                 if v is not None})
    if no_register:
        data["track"] = False
    opts = validate(GRPOOptions, apply_overrides(data, set_), "grpo options")
    Path(opts.out_dir).mkdir(parents=True, exist_ok=True)
    res = train(opts, log=lambda step, row: typer.echo(
        f"step {step}: reward {row['mean_reward']:.3f}  kl {row['kl']:.4f}  "
        f"loss {row['loss']:+.4f} -> {row['loss_last']:+.4f}  ({row['wall_s']:.0f} s)"))
    typer.echo(json.dumps({"costs": vars(res.costs), "adapter": str(res.adapter_dir)}))
    if opts.track:
        from amc.grpo.registry import log_policy_run

        logged = log_policy_run(opts, res)
        typer.echo(f"registered {logged.name} version {logged.version} (run {logged.run_id})")
