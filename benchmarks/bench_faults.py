"""Faults from the prior's endpoint, end to end: are results still right, and is anything lost?

Each scenario runs ``amc run``'s library function (:func:`amc.runner.run_methods`) with the
real OpenAI prior against the loopback toy server (:mod:`tests.priors.loopback`) on the
synthetic tree, then reruns it the way a user would (after the outage, after fixing the key),
and compares every task's metrics with a clean run's. Then ``amc run``, ``amc collect`` and
``amc evaluate`` are killed with SIGKILL at seeded random moments and rerun.

Reported per scenario: faults injected (server side), retries (client side, in the results),
failed tasks of the first run, requests the rerun sent, tasks lost and duplicated after the
rerun (both must be 0), and whether the results equal the clean run's.

Run: ``python benchmarks/bench_faults.py [--tasks 12] [--skip-kills]``; results go to
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from amc.config import load_run_config  # noqa: E402
from amc.results import read_jsonl, results_path  # noqa: E402
from amc.runner import run_methods  # noqa: E402
from benchmarks._report import md_table, write_section  # noqa: E402
from tests.priors.loopback import FAULT_KINDS, Faults, LoopbackServer  # noqa: E402

METHODS = ("react", "bon@4")
KEY = "sk-bench-fixed-key"


def config(url: str, out: Path, tasks: int, **prior: Any):
    """The scenario's run config: openai prior on ``url``, short retry budget."""
    opts = {"base_url": url, "model": "toy", "prompt": "menu", "max_retries": 3,
            "backoff_base_s": 0.02, "backoff_max_s": 0.2, "timeout_s": 1.0,
            "cache_path": str(out / "cache.sqlite"), **prior}
    over = [f"prior.options={json.dumps(opts)}", "prior.name=openai", "env.name=synthetic",
            f"methods=[{','.join(METHODS)}]", "smc.max_steps=4", f"max_tasks={tasks}",
            f"out_dir={out}"]
    return load_run_config(None, over)


def collect(out: Path) -> tuple[dict[str, dict[str, Any]], int, int]:
    """(metrics by method/task, duplicated records, retries) of a results folder."""
    metrics: dict[str, dict[str, Any]] = {}
    dupes = retries = 0
    for m in METHODS:
        recs = list(read_jsonl(results_path(out, m, 0)))
        ids = Counter(r["task_id"] for r in recs)
        dupes += sum(c - 1 for c in ids.values())
        retries += sum(r["usage"]["retries"] for r in recs)
        metrics[m] = {r["task_id"]: r["metrics"] for r in recs}
    return metrics, dupes, retries


def scenario(name: str, tasks: int, clean: dict, faults: Faults | None = None,
             require_key: str | None = None, wait_s: float = 0.0) -> list[object]:
    """One row: first run under faults, the user's rerun, then the checks."""
    out = Path(tempfile.mkdtemp(prefix="amc-bench-faults-"))
    with LoopbackServer(faults=faults or Faults(), require_key=require_key) as srv:
        os.environ["OPENAI_API_KEY"] = "sk-bench-expired" if require_key else KEY
        first = asyncio.run(run_methods(config(srv.url, out, tasks), progress=False,
                                        raise_on_failure=False))
        time.sleep(wait_s)  # the outage passes / the user fixes the key
        os.environ["OPENAI_API_KEY"] = KEY
        srv.require_key = None if require_key is None else KEY
        sent = srv.counts["requests"]
        second = asyncio.run(run_methods(config(srv.url, out, tasks), progress=False,
                                         raise_on_failure=False))
        rerun_requests = srv.counts["requests"] - sent
        injected = sum(srv.counts[k] for k in (*FAULT_KINDS, "outage", "401"))
    metrics, dupes, retries = collect(out)
    lost = sum(tasks - len(metrics[m]) for m in METHODS)
    return [name, injected, retries, first.n_failed, rerun_requests, lost, dupes,
            "yes" if metrics == clean and second.n_failed == 0 else "**no**"]


def fault_rows(tasks: int) -> list[list[object]]:
    out = Path(tempfile.mkdtemp(prefix="amc-bench-clean-"))
    with LoopbackServer() as srv:
        os.environ["OPENAI_API_KEY"] = KEY
        asyncio.run(run_methods(config(srv.url, out, tasks), progress=False))
    clean = collect(out)[0]
    transient = Faults(rate_429=0.1, rate_500=0.1, rate_stall=0.02, rate_drop=0.08,
                       stall_s=2.0, seed=1)
    damaged = Faults(rate_truncated=0.1, rate_empty=0.05, rate_null=0.05, seed=2)
    return [
        scenario("429/500/stall/drop at 30%", tasks, clean, transient),
        scenario("truncated/empty/null 200s at 20%", tasks, clean, damaged),
        scenario("outage 3 s > retry budget", tasks, clean, Faults(outage_s=3.0), wait_s=3.0),
        scenario("401 until the key is fixed", tasks, clean, require_key=KEY),
    ]


STAGE_FILES = {"run": ["out/bon@8__seed0.jsonl", "out/smc@8__seed0.jsonl"],
               "collect": ["data/trajectories/bon@8__seed0.jsonl"],
               "evaluate": ["data/eval/bon@8__seed0.jsonl", "data/eval/smc@8__seed0.jsonl"]}


def kill_row(cmd: str, n: int, rng: np.random.Generator) -> list[object]:
    """SIGKILL ``amc <cmd>`` after a random number of finished tasks, rerun, count."""
    work = Path(tempfile.mkdtemp(prefix=f"amc-bench-kill-{cmd}-"))
    params = {"env": {"name": "synthetic", "options": {"n_train": n, "n_test": n, "depth": 5}},
              "smc": {"max_steps": 5, "beta": 0.5, "resample_steps": [1, 2]},
              "collect": {"max_tasks": n, "rollouts": 8},
              "evaluate": {"max_tasks": n, "methods": ["bon", "smc"], "n_grid": [8],
                           "seeds": [0], "zero_shot_value": {"name": "exact"},
                           "compare_champion": False}}
    (work / "params.yaml").write_text(yaml.safe_dump(params))
    run_cfg = {"env": params["env"], "smc": params["smc"], "value": {"name": "exact"}}
    (work / "run.yaml").write_text(yaml.safe_dump(run_cfg))
    args = (["run", "-c", "run.yaml", "-m", "bon@8,smc@8", "--max-tasks", str(n), "--out",
             "out", "--quiet"] if cmd == "run" else [cmd, "-p", "params.yaml", "--quiet"])
    env = {**os.environ, "PYTHONPATH": str(ROOT),
           "MLFLOW_TRACKING_URI": f"sqlite:///{work}/mlruns/mlflow.db"}
    files = [work / f for f in STAGE_FILES[cmd]]
    kill_at = int(rng.integers(1, len(files) * n))

    def lines() -> int:
        return sum(f.read_bytes().count(b"\n") for f in files if f.exists())

    proc = subprocess.Popen([sys.executable, "-m", "amc.cli", *args], cwd=work, env=env,
                            start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    while proc.poll() is None and lines() < kill_at:
        time.sleep(0.005)
    killed_after = lines()
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    rc = subprocess.run([sys.executable, "-m", "amc.cli", *args], cwd=work, env=env,
                        capture_output=True).returncode
    ids = [[json.loads(x)["task_id"] for x in f.read_text().splitlines()] for f in files]
    lost = sum(n - len(set(i)) for i in ids)
    dupes = sum(len(i) - len(set(i)) for i in ids)
    return [f"`amc {cmd}`", n * len(files), killed_after, rc, lost, dupes]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=12)
    ap.add_argument("--kill-tasks", type=int, default=60)
    ap.add_argument("--kills", type=int, default=2, help="kills per command")
    ap.add_argument("--skip-kills", action="store_true")
    args = ap.parse_args()
    rows = fault_rows(args.tasks)
    body = [
        f"`python benchmarks/bench_faults.py` -- OpenAI prior against the loopback toy server "
        f"through `run_methods` ({', '.join(METHODS)}; synthetic tree, {args.tasks} tasks, 4 "
        "steps; 3 retries with 20-200 ms backoff, 1 s timeout). The first run suffers the "
        "faults; the rerun is what a user does next. *Retries* are those inside saved results "
        "(a failed task is not a result). *Rerun requests* can be 0: a failed react task's "
        "calls are bon's first particle's calls (common random numbers), which the response "
        "cache answers. *Identical*: every task's metrics equal a clean run's.",
        "",
        md_table(["scenario", "faults injected", "retries", "failed tasks (1st run)",
                  "rerun requests", "lost", "duplicated", "identical to clean"], rows),
    ]
    if not args.skip_kills:
        rng = np.random.default_rng(0)
        kills = [kill_row(c, args.kill_tasks, rng) for c in ("run", "collect", "evaluate")
                 for _ in range(args.kills)]
        body += ["", f"SIGKILL at a seeded random moment (after k finished task records), then "
                 f"the same command again ({args.kill_tasks} tasks per results file):", "",
                 md_table(["command", "task records", "killed after", "rerun exit",
                           "lost", "duplicated"], kills)]
    text = "\n".join(body)
    print(text)
    write_section("faults", "Endpoint faults, failures and kills end to end (issue 16)", text)


if __name__ == "__main__":
    main()
