"""``amc dataset`` and ``amc train``: trajectories -> value dataset -> trained, registered model.

Both are thin wrappers: :func:`amc.value.data.build_dataset` and :func:`amc.value.train.train`.
Options can come from a YAML file (``--config``, the ``DatasetOptions`` / ``TrainConfig``
fields) plus ``-S key=value`` overrides (dotted keys, YAML values), e.g.
``-S render.history_k=10`` or ``-S model.backbone=Qwen/Qwen2.5-0.5B``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from amc.cli.errors import friendly_errors
from amc.config import apply_overrides, load_yaml, validate


def _merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in top.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def _options(config: Path | None, overrides: list[str] | None,
             base: dict[str, Any]) -> dict[str, Any]:
    """Command-line flags, then the YAML file on top, then ``-S`` overrides on top of both."""
    return apply_overrides(_merge(base, load_yaml(config) if config else {}), overrides or [])


@friendly_errors
def dataset_cmd(
    trajectories: list[Path] = typer.Argument(..., help="JSON-lines files of per-task results."),
    out: Path = typer.Option(Path("data/value"), "--out", "-o", help="Output dataset directory."),
    env: str = typer.Option("generic", help="Environment (picks the instruction extractor)."),
    gamma: float = typer.Option(1.0, help="Discount of future rewards (paper: 1)."),
    keep: str = typer.Option("all", help="Rollouts per task: all (unbiased) or best (paper)."),
    history_k: int = typer.Option(20, help="K: most recent (state, action) pairs rendered."),
    max_tokens: int | None = typer.Option(None, help="Token budget of a rendering (None: none)."),
    seed: int = typer.Option(0, help="Seed of the task split."),
    config: Path | None = typer.Option(None, "--config", "-c", help="YAML with DatasetOptions."),
    set_: list[str] | None = typer.Option(None, "--set", "-S", help="Override key=value."),
) -> None:
    """Build a value-regression dataset (one row per visited state, split by task)."""
    from amc.value.data import DatasetOptions, build_dataset, read_trajectories
    from amc.value.render import render_env_for

    base = {"gamma": gamma, "keep": keep, "seed": seed,
            "render": {"env": render_env_for(env), "history_k": history_k,
                       "max_tokens": max_tokens}}
    data = _options(config, set_, base)
    opts = validate(DatasetOptions, data, "dataset options")
    card = build_dataset(read_trajectories([str(p) for p in trajectories]), out, opts)
    for split, s in card["splits"].items():
        typer.echo(f"{split:>10}: {s['tasks']} tasks, {s['trajectories']} trajectories, "
                   f"{s['rows']} states, success rate {s['success_rate']}")
    typer.echo(f"dataset {card['content_hash']} written to {out} (card: {out / 'README.md'})")


@friendly_errors
def train_cmd(
    dataset: Path = typer.Argument(..., help="Dataset directory written by `amc dataset`."),
    env: str = typer.Option("generic", help="Environment; registers amc-value-<env>."),
    out: Path = typer.Option(Path("models/value"), "--out", "-o", help="Output directory."),
    epochs: int | None = typer.Option(None, help="Maximum epochs."),
    device: str | None = typer.Option(None, help="auto, cpu or cuda."),
    tracking_uri: str | None = typer.Option(None, help="MLflow tracking URI."),
    no_track: bool = typer.Option(False, "--no-track", help="Do not log to MLflow."),
    config: Path | None = typer.Option(None, "--config", "-c", help="YAML with TrainConfig."),
    set_: list[str] | None = typer.Option(None, "--set", "-S", help="Override key=value."),
) -> None:
    """Train a value model on a dataset; log it to MLflow and register it as a challenger."""
    from amc.value.train import TrainConfig, train

    base: dict[str, Any] = {"env": env, "track": not no_track}
    for key, val in (("epochs", epochs), ("device", device), ("tracking_uri", tracking_uri)):
        if val is not None:
            base[key] = val
    cfg = validate(TrainConfig, _options(config, set_, base), "training config")
    res = train(dataset, cfg, out)
    typer.echo(json.dumps({k: round(v, 4) for k, v in res.best.items()}))
    typer.echo(f"model saved to {res.model_dir}")
    if res.registered:
        name, version = res.registered
        typer.echo(f"registered {name} version {version} as models:/{name}@challenger")
