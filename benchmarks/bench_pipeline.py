"""Wall time of every stage of the default `dvc repro`, and AMC vs Best-of-N at equal N.

Copies the project (amc/, dvc.yaml, params.yaml) into a fresh temporary git + DVC repository
with a fresh MLflow store, runs each stage in order with ``dvc repro -s <stage>`` (timed), then
reads the evaluation's per-task wall times: AMC (``smc@N+challenger``) against Best-of-N
(``bon@N``) at the largest N, same tasks and seeds. Results go to docs/benchmarks.md.

    python benchmarks/bench_pipeline.py                 # the default (embedded) main job
    python benchmarks/bench_pipeline.py -S env.name=synthetic -S prior.name=synthetic \
        -S env.options={}                               # the synthetic toy
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from amc.config import apply_overrides  # noqa: E402
from benchmarks._report import write_section  # noqa: E402

STAGES = ("collect", "dataset", "train", "evaluate", "promote", "report")


def run(cmd: list[str], cwd: Path, env: dict[str, str]) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc.stdout


def amc_vs_bon(tmp: Path, params: dict, n: int) -> dict[str, float]:
    """Wall time of bon@N and smc@N+challenger on the evaluation's tasks (no response cache)."""
    import asyncio

    from amc.pipeline.evaluate import load_plan, run_config
    from amc.pipeline.params import load_params
    from amc.runner import run_methods

    cwd = Path.cwd()
    os.chdir(tmp)
    os.environ["MLFLOW_TRACKING_URI"] = f"sqlite:///{tmp}/mlruns/mlflow.db"
    over = ["prior.options.cache=false"] if params["prior"]["name"] in ("embedded",
                                                                        "openai") else []
    p = load_params("params.yaml", over)
    pl = load_plan(p)
    specs = [f"bon@{n}", f"smc@{n}+challenger"]
    walls = dict.fromkeys(specs, 0.0)
    try:
        for k, order in enumerate((specs, specs[::-1])):
            for spec in order:
                cfg = run_config(p, pl, [spec], [0]).model_copy(
                    update={"out_dir": tmp / "bench" / f"{k}"})
                t0 = time.perf_counter()
                asyncio.run(run_methods(cfg, progress=False))
                walls[spec] += time.perf_counter() - t0
                print(f"{spec}: {walls[spec]:.1f} s", flush=True)
    finally:
        os.chdir(cwd)
    return walls


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-S", "--set", dest="overrides", action="append", default=[])
    ap.add_argument("--keep", type=Path, help="Keep the project in this directory.")
    ap.add_argument("--no-write", action="store_true", help="Do not update docs/benchmarks.md.")
    args = ap.parse_args()

    tmp = args.keep or Path(tempfile.mkdtemp(prefix="amc-bench-pipeline-"))
    tmp.mkdir(parents=True, exist_ok=True)
    shutil.copytree(ROOT / "amc", tmp / "amc", ignore=shutil.ignore_patterns("__pycache__"),
                    dirs_exist_ok=True)
    shutil.copy(ROOT / "dvc.yaml", tmp / "dvc.yaml")
    params = apply_overrides(yaml.safe_load((ROOT / "params.yaml").read_text()), args.overrides)
    (tmp / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    (tmp / ".gitignore").write_text("mlruns/\n__pycache__/\n.cache/\n")
    env = {**os.environ, "PYTHONPATH": str(tmp), "DVC_NO_ANALYTICS": "1",
           "MLFLOW_DISABLE_TELEMETRY": "true", "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("MLFLOW_TRACKING_URI", None)
    for cmd in (["git", "init", "-q"], ["git", "config", "user.email", "bench@amc.invalid"],
                ["git", "config", "user.name", "bench"], ["dvc", "init", "-q"],
                ["git", "add", "-A"], ["git", "commit", "-qm", "bench"]):
        run(cmd, tmp, env)

    times: dict[str, float] = {}
    for stage in STAGES:
        t0 = time.perf_counter()
        run(["dvc", "repro", "-s", stage], tmp, env)
        times[stage] = time.perf_counter() - t0
        print(f"{stage:>9}: {times[stage]:7.1f} s", flush=True)
    total = sum(times.values())

    ev = json.loads((tmp / "data/eval/evaluation.json").read_text())  # the full record
    n = max(ev["n_grid"])
    walls = amc_vs_bon(tmp, params, n)
    ratio = walls[f"smc@{n}+challenger"] / walls[f"bon@{n}"]
    promo = json.loads((tmp / "data/promotion/decision.json").read_text())
    print(f"total {total:.1f} s; AMC/BoN wall ratio at N={n}: {ratio:.3f}")

    setting = ", ".join(args.overrides) or "default params.yaml"
    rows = "\n".join(f"| {s} | {times[s]:.1f} |" for s in STAGES)
    body = f"""Script: `benchmarks/bench_pipeline.py` ({setting}: env `{params['env']['name']}`,
prior `{params['prior']['name']}`). Each stage is `dvc repro -s <stage>` in a fresh temporary
repository with a fresh MLflow store (so the first promotion finds no champion).

| stage | wall s |
|---|---|
{rows}
| **total** | **{total:.1f}** |

AMC vs Best-of-N at equal N = {n}: wall time of the whole method run over the same
{ev['n_tasks']} test tasks (seed 0, response cache off, run twice in alternating order, summed;
AMC includes loading the value model): `smc@{n}+challenger` {walls[f'smc@{n}+challenger']:.1f} s
vs `bon@{n}` {walls[f'bon@{n}']:.1f} s, ratio **{ratio:.3f}** (goal <= 1.05).
Promotion: {promo['reason']}.
"""
    if not args.no_write:
        name = "pipeline" if not args.overrides else "pipeline-toy"
        write_section(name, "Pipeline: stage wall times" + (" (toy)" if args.overrides else ""),
                      body)
    print(body)


if __name__ == "__main__":
    main()
