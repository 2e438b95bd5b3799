"""Run a confirmatory protocol once: every declared arm on every declared (task, seed).

    python -m studies.confirm.run studies/confirm/sciworld.json        # resumable
    python -m studies.confirm.run studies/confirm/sciworld.json --replication r2
    python -m studies.confirm.run studies/confirm/sciworld.json --pilot 3210   # timing only

Results go to ``evidence/confirm/<protocol id>/`` (:mod:`studies.confirm.once`): the drawn
task list (``tasks.json``), one line per finished (task, seed) with every arm's task metrics,
prior calls and seconds (``rows.jsonl``, appended as each lands, so a run cut off resumes
where it stopped), and ``DONE`` after the last one; a finished run refuses to run again
unless declared a replication. The arms are the sweep's own (:mod:`studies.sweeps.cell`):
Best-of-N and SMC with a value through :func:`amc.smc.sampler.run_task`, the planner-mix
prior at the declared skill, on the same (task, seed). The learned value is rebuilt from its
kept copy and must have the declared content hash. ``--pilot TASK`` times one (task, seed 0)
of a task *outside* the declared set, writes nothing under ``evidence/`` and prints seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from studies.confirm import once
from studies.confirm.protocol import (
    Protocol,
    load,
    sciworld_tasks,
    textcraft_tasks,
    webshop_tasks,
)

RESULTS = Path("evidence/confirm")
VALUES = Path("/tmp/amc-confirm-values")
"""Where kept values are rebuilt (outside the shared tree)."""
CATALOGS = Path("/tmp/amc-confirm-webshop")
"""Where WebShop's generated fixture catalogs are written (``seed<k>/``; a seed's files are
the same bytes every time)."""


def cell_params(p: Protocol, value: str, model_dir: str | None) -> Any:
    """The sweep's cell keys for one arm of the protocol (what :mod:`studies.sweeps.cell`
    builds its driver configuration and value from)."""
    from studies.sweeps.config import CellParams

    r = p.regime
    keys = {k: r[k] for k in ("q", "beta", "n", "schedule", "every", "budget", "slack",
                              "depth", "menu_form", "sharpen", "rollouts", "rollout_final")
            if k in r}
    return CellParams.model_validate({**keys, "benchmark": p.benchmark, "split": "test",
                                      "value": value, "value_model": model_dir or "none"})


def value_id(model_dir: Path) -> str:
    """The value's id as the sweep's records give it (:func:`studies.sweeps.harvest.value_id`):
    the model's content hash, and with a fitted calibration (``calibration.json``, which the
    model hash does not cover) its method and the digest of its parameters."""
    from amc.value.digest import model_hash
    from studies.sweeps.cell import CALIBRATION_FILE
    from studies.sweeps.harvest import value_id as record_id

    cal = model_dir / CALIBRATION_FILE
    return record_id({"model_hash": model_hash(model_dir),
                      "calibration": json.loads(cal.read_text()) if cal.is_file() else None})


def learned_model(p: Protocol) -> str:
    """The kept value rebuilt under :data:`VALUES`, checked against the declared id (model
    hash, and calibration digest when one is declared)."""
    from studies.sweeps.keep_value import restore

    want = str(p.value["model_hash"])
    out = VALUES / want
    if not out.is_dir():
        restore(Path(p.value["kept"]), out)
    have = value_id(out)
    if have != want:
        raise once.OnceError(f"{p.id}: the value at {out} is {have}, declared {want}")
    return str(out)


def webshop_suite(seed: int, n_products: int, budget: int) -> Any:
    """WebShop over the generated fixture catalog of ``seed`` (the sweep's cells: seed 0),
    the environment's step limit the declared budget (the forced buy follows it)."""
    from amc.envs.webshop.env import WebShopOptions, WebShopSuite
    from amc.envs.webshop.fixture import write_fixture_catalog

    data = write_fixture_catalog(CATALOGS / f"seed{seed}", n_products, seed)
    return WebShopSuite(WebShopOptions(data_dir=str(data), max_steps=budget))


def make_suite(p: Protocol) -> Any:
    if p.benchmark == "sciworld":
        from amc.envs.sciworld.env import SciWorldOptions, SciWorldSuite

        return SciWorldSuite(SciWorldOptions(max_steps=int(p.regime["budget"]),
                                             enumerate_actions=True, pool_size=4))
    if p.benchmark == "textcraft":
        from studies.sweeps.tasks import make_suite as tc_suite

        return tc_suite(cell_params(p, "none", None))
    if p.benchmark == "webshop":
        return webshop_suite(int(p.tasks["fixture_seed"]), int(p.tasks["n_products"]),
                             int(p.regime["budget"]))
    raise ValueError(f"{p.id}: no runner for {p.benchmark} yet")


async def run_pairs(p: Protocol, suite: Any, tasks: list[str], seeds: tuple[int, ...],
                    model_dir: str | None, done: set[tuple[str, int]], sink: Any) -> None:
    """Every arm on each (task, seed) not in ``done``; ``sink(row)`` keeps each row."""
    from amc.config import ValueConfig
    from amc.priors.planner_mix import PlannerMixOptions, PlannerMixPrior, load_planner
    from amc.smc.methods import parse_method
    from amc.smc.sampler import run_task
    from amc.value.simple import ZeroValue
    from studies.sweeps.bench import bench_budget
    from studies.sweeps.cell import ValueFactory, method_row, smc_config

    learned = cell_params(p, "learned", model_dir) if model_dir else None
    prior = PlannerMixPrior(suite, load_planner(p.benchmark), PlannerMixOptions(
        q=float(p.regime["q"]), menu_form=bool(p.regime.get("menu_form")) and
        p.benchmark == "textcraft"))
    factories: dict[str, Any] = {"amc": ValueFactory(learned, suite, prior) if learned else None,
                 "amc_none": ValueFactory(cell_params(p, "none", None), suite, prior),
                 "ceiling": ValueFactory(cell_params(p, "rollout", None), suite, prior)}
    selection = factories["amc"].selection if factories["amc"] else None
    hidden = None if p.benchmark == "textcraft" else float(p.regime["beta"])
    base = cell_params(p, "none", None)
    for task in tasks:
        budget = bench_budget(suite, base, task)
        smc = smc_config(base, budget)
        for seed in seeds:
            if (task, seed) in done:
                continue
            row: dict[str, Any] = {"task_id": task, "seed": seed, "budget": budget}
            for arm in p.arms:
                t0 = time.perf_counter()
                method = "bon" if arm == "bon" else "smc"
                cfg = parse_method(f"{method}@{p.regime['n']}", smc, ValueConfig()).smc
                value = ZeroValue() if arm == "bon" else factories[arm](budget)
                res = await run_task(suite=suite, prior=prior, value=value, task_id=task,
                                     smc=cfg, seed=seed, method=arm, selection=selection)
                row[arm] = {**method_row(res, hidden), "s": round(time.perf_counter() - t0, 2)}
            sink(row)
    await prior.aclose()


def draw(p: Protocol, suite: Any, folder: Path) -> list[str]:
    """The declared tasks, drawn once and kept (``tasks.json``); later resumes read it."""
    path = folder / "tasks.json"
    if path.is_file():
        return [t["task_id"] for t in json.loads(path.read_text())["tasks"]]
    if p.benchmark == "sciworld":
        drawn = sciworld_tasks(p, suite, Path("."))
    elif p.benchmark == "webshop":
        used = {g["instruction_text"] for k in p.tasks["exclude_fixture_seeds"] for g in
                webshop_suite(int(k), int(p.tasks["n_products"]), 1).catalog.goals}
        drawn = webshop_tasks(p, suite, used)
    else:
        drawn = textcraft_tasks(p, suite)
    path.write_text(json.dumps({"protocol": p.id, "protocol_hash": p.sha256, "tasks": drawn},
                               indent=1) + "\n")
    return [t["task_id"] for t in drawn]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("protocol", type=Path)
    ap.add_argument("--replication", help="a declared replication's id (its own results)")
    ap.add_argument("--pilot", help="time one task outside the declared set; keeps nothing")
    ap.add_argument("--results", type=Path, default=RESULTS)
    a = ap.parse_args(argv)
    try:
        p = load(a.protocol)
        if not p.runnable:
            raise once.OnceError(f"{p.id} is blocked: {p.blocked_by}")
        folder = once.run_dir(a.results, p.id, a.replication)
        if not a.pilot:  # refuse a finished run before building anything
            once.claim(folder, p.id, p.sha256, a.replication)
        model = learned_model(p) if "amc" in p.arms else None
        suite = make_suite(p)
        if a.pilot:
            t0 = time.perf_counter()
            rows: list[dict[str, Any]] = []
            asyncio.run(run_pairs(p, suite, [a.pilot], (p.seeds[0],), model, set(),
                                  rows.append))
            print(json.dumps({"pilot": a.pilot, "wall_s": round(time.perf_counter() - t0, 1),
                              "arms_s": {k: rows[0][k]["s"] for k in p.arms}}))
            return 0
        t0 = time.perf_counter()
        tasks = draw(p, suite, folder)
        done = {(str(r["task_id"]), int(r["seed"])) for r in once.kept_rows(folder)}
        print(f"{p.id}: {len(tasks)} tasks x {len(p.seeds)} seeds, {len(done)} kept",
              file=sys.stderr, flush=True)

        def sink(row: dict[str, Any]) -> None:
            once.keep_row(folder, row)
            print(f"kept {row['task_id']} seed {row['seed']} "
                  f"({sum(row[k]['s'] for k in p.arms):.0f} s)", file=sys.stderr, flush=True)

        asyncio.run(run_pairs(p, suite, tasks, p.seeds, model, done, sink))
        n = len(once.kept_rows(folder))
        if n == len(tasks) * len(p.seeds):
            once.finish(folder, {"rows": n, "last_sitting_s": round(time.perf_counter() - t0)})
    except (once.OnceError, ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
