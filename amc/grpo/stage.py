"""Optional stage ``grpo``: the white-box reference (issue 18), off by default.

GRPO fine-tunes the agent itself; AMC leaves it frozen and spends inference compute. This stage
puts the two side by side at the sizes of ``params.yaml``'s ``grpo`` section:

1. **train** -- ``amc grpo`` (:func:`amc.grpo.trainer.train`) with ``grpo.train`` over the
   CPU-miniature defaults; the adapter is logged to MLflow and registered as
   ``amc-policy-<env>`` when ``grpo.train.track`` (the default).
2. **evaluate the frozen prior** -- ReAct, Best-of-N and SMC@N (with ``grpo.value``: AMC when
   it is a learned value, SMC with the prior only when ``none``) through ``amc run``'s driver,
   with the ``hf`` prior on the *training* model: the same runtime as the policy's.
3. **evaluate the GRPO policy** -- ReAct and Best-of-N with the same ``hf`` prior plus the
   adapter, on the same environment, split, tasks and seeds.
4. **compare** -- :mod:`amc.reports.grpo_table` writes ``comparison.md`` and the metrics file
   (success, oracle reward, inference tokens per task, training costs).

The environment is the one trained on (``grpo.train.env``/``env_options``), evaluated on
another split. With ``grpo.enabled: false`` the stage trains and evaluates nothing: it writes
its outputs as a one-line note (so ``dvc --cd grpo repro`` succeeds) and returns.
The section is read here, not by :class:`amc.pipeline.params.PipelineParams`: no default stage
depends on it.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

from pydantic import Field

from amc.config import Frozen, RunConfig, Seeds, ValueConfig, load_yaml, validate
from amc.grpo.config import GRPOOptions
from amc.results import write_json_atomic

POLICY, FROZEN, EVAL_POLICY = "policy", "frozen", "policy-eval"
"""Sub-folders of ``grpo.out_dir``: the adapter and curve, and the two ``amc run`` outputs."""


class GRPOStageParams(Frozen):
    """``grpo``: train a GRPO policy and compare it with the frozen prior (issue 18)."""

    enabled: bool = False
    """Off by default: GRPO training costs minutes to hours; true runs every step."""
    train: dict[str, Any] = Field(default_factory=dict)
    """:class:`amc.grpo.config.GRPOOptions` fields over its defaults (the CPU miniature);
    ``out_dir`` is set by the stage (``<out_dir>/policy``)."""
    split: str = "test"
    """Evaluation split (training uses ``train.split``, default train)."""
    max_tasks: int | None = Field(6, ge=1)
    """First K tasks of the evaluation split (None = all)."""
    seeds: Seeds = (0, 1)
    """Run seeds of both evaluations (the same for both: a paired design); none twice."""
    n: int = Field(4, ge=2)
    """Particles of Best-of-N and SMC."""
    max_steps: int = Field(4, ge=1)
    """Steps per particle (the training's max_turns by default: 4)."""
    resample_steps: list[int] = Field(default_factory=lambda: [2])
    """SMC resampling steps."""
    value: ValueConfig = ValueConfig(name="none")
    """SMC's value on the frozen prior: a learned one (``{name: learned, options: {model:
    ...}}``) makes it AMC; ``none`` is SMC with the prior only (reported as such)."""
    prior: dict[str, Any] = Field(
        default_factory=lambda: {"max_new_tokens": 6, "top_k": 0, "top_p": 1.0})
    """``hf`` prior options of both evaluations (``model`` comes from ``train``); default:
    temperature-only sampling capped like training's turns."""
    out_dir: Path = Path("grpo/out")
    """Adapter, the two runs' results and ``comparison.md``."""
    metrics_file: Path = Path("grpo/metrics.json")
    """The comparison's rows and the training costs (DVC metrics)."""


class _Params(Frozen):
    """A params file as this stage reads it: its ``grpo`` section (errors say ``grpo.KEY``)."""

    grpo: GRPOStageParams = GRPOStageParams()
    """The stage's section."""


def load_stage_params(path: str | Path = "params.yaml") -> GRPOStageParams:
    """The ``grpo`` section of a params file (defaults when absent); an error starts with the
    key (``grpo.seeds: ...``)."""
    section = load_yaml(Path(path)).get("grpo") or {}
    return validate(_Params, {"grpo": section}, "").grpo


def train_options(sp: GRPOStageParams) -> GRPOOptions:
    """The GRPO run's options: ``grpo.train`` with the stage's output folder."""
    return validate(GRPOOptions, {**sp.train, "out_dir": str(sp.out_dir / POLICY)},
                    "grpo.train")


def train_policy(sp: GRPOStageParams) -> dict[str, Any]:
    """Step 1: train (and register) the policy; returns its adapter folder and costs."""
    from amc.grpo.trainer import train

    opts = train_options(sp)
    Path(opts.out_dir).mkdir(parents=True, exist_ok=True)
    res = train(opts)
    out: dict[str, Any] = {"adapter": str(res.adapter_dir), "costs": vars(res.costs)}
    if opts.track:
        from amc.grpo.registry import log_policy_run

        logged = log_policy_run(opts, res)
        out.update(model=logged.name, version=logged.version, run_id=logged.run_id)
    return out


def eval_config(sp: GRPOStageParams, adapter: str | None) -> RunConfig:
    """The ``amc run`` configuration of one side: frozen (no adapter) or the GRPO policy."""
    opts = train_options(sp)
    methods = ["react", f"bon@{sp.n}"] + ([f"smc@{sp.n}"] if adapter is None else [])
    prior = {"model": opts.model, "prompt": opts.prompt, "max_history_steps":
             opts.max_history_steps, "menu_limit": opts.menu_limit, **sp.prior}
    if adapter is not None:
        prior["adapter"] = adapter
    data = {"env": {"name": opts.env, "options": opts.env_options},
            "prior": {"name": "hf", "options": prior},
            "value": sp.value.model_dump(mode="json"),
            "smc": {"max_steps": sp.max_steps, "resample": "fixed",
                    "resample_steps": sp.resample_steps},
            "methods": methods, "split": sp.split, "max_tasks": sp.max_tasks,
            "seeds": sp.seeds, "out_dir": str(sp.out_dir / (FROZEN if adapter is None
                                                          else EVAL_POLICY))}
    return validate(RunConfig, data, "grpo evaluation")


def evaluate(cfg: RunConfig) -> Path:
    """Steps 2 and 3: run the methods (resumable) and write ``summary.json`` as ``amc run``."""
    from amc.runner import resolve_methods, run_methods, write_summary

    resolve_methods(cfg)
    started = time.perf_counter()
    outcome = asyncio.run(run_methods(cfg, progress=False))
    write_summary(cfg, outcome, time.perf_counter() - started)
    return Path(cfg.out_dir or ".") / "summary.json"


def compare(sp: GRPOStageParams) -> dict[str, Any]:
    """Step 4: ``comparison.md`` (the Table-11 section) and the metrics file."""
    from amc.reports.grpo_table import grpo_section

    frozen, policy = sp.out_dir / FROZEN / "summary.json", sp.out_dir / EVAL_POLICY / "summary.json"
    metrics = sp.out_dir / POLICY / "metrics.json"
    (sp.out_dir / "comparison.md").write_text("\n".join(grpo_section(frozen, policy, metrics))
                                              + "\n")
    rows = {}
    for side, path in (("frozen", frozen), ("grpo", policy)):
        for m in json.loads(path.read_text())["methods"]:
            rows[f"{side}/{m['method']}"] = {k: m[k] for k in (
                "success", "success_se", "oracle_best", "oracle_best_se", "tokens_per_task")}
    out = {"enabled": True, "value": sp.value.name, "methods": rows,
           "training": json.loads(metrics.read_text())["costs"]}
    write_json_atomic(sp.metrics_file, out)
    return out


def run(sp: GRPOStageParams) -> dict[str, Any]:
    """Every step, or the disabled note when ``grpo.enabled`` is false."""
    if not sp.enabled:
        note = "grpo.enabled is false: nothing trained or evaluated (set it true to run)."
        sp.out_dir.mkdir(parents=True, exist_ok=True)
        (sp.out_dir / "comparison.md").write_text(note + "\n")
        out: dict[str, Any] = {"enabled": False}
        write_json_atomic(sp.metrics_file, out)
        return out
    trained = train_policy(sp)
    evaluate(eval_config(sp, None))
    evaluate(eval_config(sp, str(Path(trained["adapter"]).resolve())))
    return compare(sp)


def main(argv: list[str] | None = None) -> None:
    """``python -m amc.grpo.stage [params.yaml]`` (the DVC stage's command)."""
    import sys

    from amc.errors import USER_ERRORS, user_message

    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) > 1 or (args and args[0].startswith("-")):
        raise SystemExit("usage: python -m amc.grpo.stage [params.yaml]")
    try:
        out = run(load_stage_params(args[0] if args else "params.yaml"))
    except USER_ERRORS as err:
        print(f"error: {user_message(err)}", file=sys.stderr)
        raise SystemExit(2) from None
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
