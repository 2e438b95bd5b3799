"""The SFT stage: demonstrations -> LoRA run -> MLflow run and ``amc-policy-<env>`` version.

One entry, :func:`run_sft`, shared by ``amc sft``, the DVC stage (``sft/dvc.yaml``, its own
DVC project, reading ``sft`` of ``params.yaml``) and the Prefect flow (``flows/sft.py``):

1. **demonstrations** (:mod:`amc.sft.demos`): written to ``<out_dir>/demos.jsonl`` with their
   sha256; refused if any task is held out or outside the train split;
2. **training** (:mod:`amc.sft.loop`): resumable, checkpoints every ``checkpoint_every`` steps;
3. **tracking** (:mod:`amc.sft.registry`, when ``track``): params, the curve, wall and CPU
   cost, the data hash; the final adapter registered as a version of ``amc-policy-<env>``,
   each checkpoint logged as an artifact (skill is a dial).

The section is read here, not by the default pipeline's params: no default stage depends on it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from amc.config import load_yaml, validate
from amc.results import write_json_atomic
from amc.sft.config import SFTOptions

DEMOS_FILE, METRICS_FILE, CURVE_FILE = "demos.jsonl", "metrics.json", "curve.jsonl"


def load_options(params_path: str | Path = "params.yaml") -> SFTOptions:
    """``sft`` of a params file as options (a clear error when it has none)."""
    data = load_yaml(Path(params_path)) or {}
    if "sft" not in data:
        raise ValueError(f"{params_path} has no 'sft' section")
    return validate(SFTOptions, data["sft"], "sft")


def prepare_demos(opts: SFTOptions, log: Callable[[str], None] = print
                  ) -> tuple[list[Any], str]:
    """The run's demonstrations (built, leak-checked, written) and their hash."""
    from amc.registry import ENVIRONMENTS, load_builtin_components
    from amc.sft.dagger import all_demos
    from amc.sft.demos import check_no_leak, demo_tasks, write_demos

    load_builtin_components()
    suite = ENVIRONMENTS.build(opts.env, opts.env_options)
    try:
        n = len(demo_tasks(opts, suite))
        demos = all_demos(opts, suite)
        check_no_leak(demos, opts, suite)
    finally:
        suite.close()
    digest = write_demos(demos, Path(opts.out_dir) / DEMOS_FILE)
    log(f"sft demos: {len(demos)} pairs from {n} {opts.demos.split} tasks "
        f"(sha256 {digest[:12]})")
    return demos, digest


def run_sft(opts: SFTOptions, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Demonstrations, training and tracking; returns the metrics written to metrics.json."""
    from amc.sft.loop import train

    out = Path(opts.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    demos, digest = prepare_demos(opts, log)
    res = train(opts, demos, digest, log)
    with open(out / CURVE_FILE, "w") as f:
        for row in res.curve:
            f.write(json.dumps(row) + "\n")
    metrics: dict[str, Any] = {
        "pairs": len(demos), "data_sha256": digest, "steps": len(res.curve),
        "costs": res.costs, "checkpoints": res.checkpoints, "initial": res.initial,
        "final_loss": res.curve[-1]["loss"] if res.curve else None}
    if opts.track:
        from amc.sft.registry import log_sft_run

        logged = log_sft_run(opts, res, digest, len(demos))
        metrics["registered"] = {"name": logged.name, "version": logged.version,
                                 "run_id": logged.run_id}
        log(f"sft: registered {logged.name} version {logged.version}")
    write_json_atomic(out / METRICS_FILE, metrics)
    return metrics


def main() -> None:
    """``python -m amc.sft.stage [params.yaml]`` (the DVC stage's command)."""
    import sys

    run_sft(load_options(sys.argv[1] if len(sys.argv) > 1 else "params.yaml"))


if __name__ == "__main__":
    main()
